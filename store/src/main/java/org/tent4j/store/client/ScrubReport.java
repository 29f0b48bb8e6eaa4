package org.tent4j.store.client;

import java.util.List;

/**
 * What {@link StoreClient#scrubDisk} found.
 *
 * @param checked    disk replicas read back and checked
 * @param mismatches the disk replicas whose bytes did not match their CRC32C (or could not be read)
 * @param dropped    how many of those the master dropped (the rest had changed meanwhile)
 */
public record ScrubReport(long checked, List<Mismatch> mismatches, long dropped) {
    public ScrubReport {
        mismatches = List.copyOf(mismatches);
    }

    /** The keys of the {@link #mismatches}, in the order they were found. */
    public List<String> corrupt() {
        return mismatches.stream().map(Mismatch::key).toList();
    }

    /**
     * One disk replica that failed its check.
     *
     * @param key    the object's key
     * @param file   the disk segment's file
     * @param offset where the replica starts in it
     * @param length its bytes
     * @param reason the read's failure, or the CRC32C it had against the one recorded
     */
    public record Mismatch(String key, String file, long offset, long length, String reason) {
    }
}
