package org.tent4j.runtime.control;

import java.util.concurrent.atomic.LongAdder;

import org.slf4j.Logger;

/** Log lines for refusals a peer can repeat at will (the control plane's limits, dropped notifications). */
public final class RefusalLog {
    private RefusalLog() {
    }

    /**
     * Logs the 1st, 2nd, 4th, 8th ... event that {@code count} counts: every kind of refusal is visible in the log,
     * and a peer that repeats one a million times cannot flood it. Text arguments are what a peer chose (a name, a
     * service, a reason): their control characters are written as escapes, so no peer can start a log line of its own
     * whatever the application's log pattern.
     */
    public static void warnSometimes(Logger log, LongAdder count, String format, Object... args) {
        long n = count.sum();
        if (Long.bitCount(n) == 1) {
            Object[] withCount = java.util.Arrays.copyOf(args, args.length + 1);
            for (int i = 0; i < args.length; i++) {
                if (args[i] instanceof CharSequence text) {
                    withCount[i] = oneLine(text);
                }
            }
            withCount[args.length] = n;
            log.warn(format + " [{} so far]", withCount);
        }
    }

    /** {@code text} with every control character written as {@code \n}, {@code \r}, {@code \t} or {@code \xNN}. */
    static String oneLine(CharSequence text) {
        StringBuilder sb = new StringBuilder(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (Character.isISOControl(c) || c == '\u2028' || c == '\u2029') {
                        sb.append(String.format("\\x%02x", (int) c & 0xffff));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        return sb.toString();
    }
}
