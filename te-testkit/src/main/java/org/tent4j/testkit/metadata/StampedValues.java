package org.tent4j.testkit.metadata;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.nio.charset.StandardCharsets;

/**
 * 4 KiB values whose every byte depends on who wrote them (thread, round), so a value read back that is torn, or mixes
 * two writes, is caught and the write it came from named.
 */
final class StampedValues {
    private StampedValues() {
    }

    /** The value thread {@code thread} writes in round {@code round}. */
    static byte[] stamped(int thread, int round) {
        byte[] v = new byte[4096];
        byte[] head = (thread + ":" + round + "|").getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(head, 0, v, 0, head.length);
        for (int i = head.length; i < v.length; i++) {
            v[i] = (byte) (thread * 31 + round * 7 + i);
        }
        return v;
    }

    /** The (thread, round) that wrote {@code v}; an {@link AssertionError} when no single write did. */
    static int[] check(byte[] v) {
        String s = new String(v, 0, Math.min(16, v.length), StandardCharsets.US_ASCII);
        int bar = s.indexOf('|');
        int colon = s.indexOf(':');
        if (bar < 0 || colon < 0 || colon > bar) {
            throw new AssertionError("value is not one that was written: " + WatchRecorder.describe(v));
        }
        int thread = Integer.parseInt(s.substring(0, colon));
        int round = Integer.parseInt(s.substring(colon + 1, bar));
        assertArrayEquals(stamped(thread, round), v, "value mixes two writes");
        return new int[] {thread, round};
    }
}
