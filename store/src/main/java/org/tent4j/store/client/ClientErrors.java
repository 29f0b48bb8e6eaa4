package org.tent4j.store.client;

import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.proto.Status;
import org.tent4j.store.rpc.Wire;

/** The client's errors that more than one part raises, worded once. */
final class ClientErrors {
    private ClientErrors() {
    }

    static StoreException bufferTooSmall(String key, long room, long size) {
        return new StoreException(StoreError.INVALID_PARAMS, "buffer of " + room + " bytes is too small for key '" + key
                + "' (" + size + " bytes)");
    }

    static StoreException noReplica(String key) {
        return new StoreException(StoreError.OBJECT_NOT_FOUND, "key '" + key + "' has no replica to read");
    }

    /** The master's status as the exception it stands for; null for success. */
    static StoreException error(Status s) {
        try {
            Wire.check(s);
            return null;
        } catch (StoreException e) {
            return e;
        }
    }
}
