package org.tent4j.store.client;

import java.lang.foreign.MemorySegment;
import java.util.List;

import org.tent4j.api.TransferEngine;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;

/**
 * Checks the caller's memory before the store acts on it: a zero-copy source must lie in one registration of this
 * client's engine, a destination too and be writable. A call that fails the check is refused with
 * {@code INVALID_PARAMS} naming the key, the address range and what is wrong, before the master is asked for
 * anything: a caller's mistake then never places, evicts or excludes a segment. After a failed transfer the same
 * check tells a local cause (the memory was unregistered meanwhile) from a remote one.
 */
final class LocalMemoryCheck {
    private final TransferEngine engine;
    /** False once the engine answered that it does not look up registrations: then the engine's own errors stand. */
    private volatile boolean supported = true;

    LocalMemoryCheck(TransferEngine engine) {
        this.engine = engine;
    }

    /** Throws unless every part can be the source of writes of {@code key}'s value. */
    void sources(String key, List<MemorySegment> parts) {
        check(key, parts, false);
    }

    /** Throws unless every part can be the destination of reads of {@code key}'s value. */
    void destinations(String key, List<MemorySegment> parts) {
        check(key, parts, true);
    }

    private void check(String key, List<MemorySegment> parts, boolean destination) {
        for (MemorySegment p : parts) {
            String wrong = problem(key, p, destination);
            if (wrong != null) {
                throw new StoreException(StoreError.INVALID_PARAMS, wrong);
            }
        }
    }

    /**
     * After {@code failure} of writes from {@code parts}: throws when the cause is this side (the memory was
     * unregistered meanwhile), so the caller neither blames nor excludes a remote segment; returns otherwise.
     */
    void afterFailedWrite(String key, List<MemorySegment> parts, StoreException failure) {
        for (MemorySegment p : parts) {
            String wrong = problem(key, p, false);
            if (wrong != null) {
                throw new StoreException(StoreError.INVALID_PARAMS, wrong + " (the write failed: " + failure.getMessage() + ")", failure);
            }
        }
    }

    /** Throws, naming the first bad item's index and key, unless every {@code memory[i]} is fit for {@code keys[i]}. */
    void batch(List<String> keys, List<MemorySegment> memory, boolean destination) {
        for (int i = 0; i < memory.size(); i++) {
            String wrong = problem(keys.get(i), memory.get(i), destination);
            if (wrong != null) {
                throw new StoreException(StoreError.INVALID_PARAMS, "batch item " + i + ": " + wrong);
            }
        }
    }

    /** What makes {@code memory} unfit as a source (or destination) of {@code key}; null when it is fit. */
    private String problem(String key, MemorySegment memory, boolean destination) {
        if (memory.byteSize() == 0 || !supported) {
            return null;
        }
        if (destination && memory.isReadOnly()) {
            return range(key, memory) + "is a read-only segment and cannot be read into";
        }
        if (!memory.isNative()) {
            return range(key, memory) + "is heap memory, which the engine cannot move; use the copying call (put/get)";
        }
        try {
            if (engine.findRegistration(memory).isEmpty()) {
                boolean starts = engine.findRegistration(memory.asSlice(0, 1)).isPresent();
                return range(key, memory) + (starts ? "runs past the end of the registration it starts in"
                        : "is not registered with engine '" + engine.segmentName() + "'");
            }
        } catch (UnsupportedOperationException e) {
            supported = false;
        }
        return null;
    }

    /** The start of a refusal, made only for one: every key of every call passes through {@link #problem}. */
    private static String range(String key, MemorySegment memory) {
        return "key '" + key + "': local memory " + (memory.isNative() ? "[0x" + Long.toHexString(memory.address())
                + ", +" + memory.byteSize() + ")" : "(heap, " + memory.byteSize() + " bytes)") + " ";
    }
}
