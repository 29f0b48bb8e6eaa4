package org.tent4j.runtime.control;

import java.util.concurrent.atomic.LongAdder;

import org.slf4j.Logger;

/** Log lines for refusals a peer can repeat at will (the control plane's limits, dropped notifications). */
public final class RefusalLog {
    private RefusalLog() {
    }

    /**
     * Logs the 1st, 2nd, 4th, 8th ... event that {@code count} counts: every kind of refusal is visible in the log,
     * and a peer that repeats one a million times cannot flood it.
     */
    public static void warnSometimes(Logger log, LongAdder count, String format, Object... args) {
        long n = count.sum();
        if (Long.bitCount(n) == 1) {
            Object[] withCount = java.util.Arrays.copyOf(args, args.length + 1);
            withCount[args.length] = n;
            log.warn(format + " [{} so far]", withCount);
        }
    }
}
