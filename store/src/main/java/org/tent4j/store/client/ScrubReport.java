package org.tent4j.store.client;

import java.util.List;

/**
 * What {@link StoreClient#scrubDisk} found.
 *
 * @param checked disk replicas read back and checked
 * @param corrupt keys whose disk bytes did not match their CRC32C (or could not be read)
 * @param dropped how many of those the master dropped (the rest had changed meanwhile)
 */
public record ScrubReport(long checked, List<String> corrupt, long dropped) {
}
