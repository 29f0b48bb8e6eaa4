package org.tent4j.api;

/**
 * Where a buffer lives: {@code cpu:N} (NUMA node N), {@code cuda:N}, {@code rocm:N}, {@code npu:N} (device N),
 * or {@code *} for "any / detect".
 *
 * @param kind  memory kind, or {@code null} for the wildcard
 * @param index NUMA node or device ordinal, {@code -1} for the wildcard
 */
public record Location(MemoryKind kind, int index) {

    /** The wildcard {@code *}: any location, or detect it. */
    public static final Location ANY = new Location(null, -1);
    /** NUMA node 0 of host memory ({@code cpu:0}). */
    public static final Location CPU = new Location(MemoryKind.CPU, 0);
    /** Where every registered file lives ({@code file:0}). */
    public static final Location FILE = new Location(MemoryKind.FILE, 0);

    /**
     * Checks the pair.
     *
     * @throws IllegalArgumentException for a wildcard with an index, or a negative index
     */
    public Location {
        if (kind == null && index != -1) {
            throw new IllegalArgumentException("wildcard location takes no index");
        }
        if (kind != null && index < 0) {
            throw new IllegalArgumentException("location index must be >= 0, got " + index);
        }
    }

    /**
     * Host memory on a NUMA node.
     *
     * @param numaNode the node, &gt;= 0
     * @return {@code cpu:numaNode}
     */
    public static Location cpu(int numaNode) {
        return new Location(MemoryKind.CPU, numaNode);
    }

    /**
     * Memory of one device.
     *
     * @param kind    the device's memory kind
     * @param ordinal the device's ordinal, &gt;= 0
     * @return e.g. {@code cuda:1}
     */
    public static Location device(MemoryKind kind, int ordinal) {
        return new Location(kind, ordinal);
    }

    /**
     * Parses {@code cpu:0}, {@code cuda:1}, {@code rocm:0}, {@code npu:3} or {@code *}; a bare kind means index 0.
     *
     * @param text the location string
     * @return the location
     * @throws IllegalArgumentException naming the text when it is empty or malformed
     */
    public static Location parse(String text) {
        if (text == null || text.isBlank()) {
            throw new IllegalArgumentException("location must not be empty (expected e.g. cpu:0, cuda:1 or *)");
        }
        String t = text.strip();
        if (t.equals("*")) {
            return ANY;
        }
        int colon = t.indexOf(':');
        if (colon < 0) {
            return new Location(MemoryKind.fromPrefix(t), 0);
        }
        MemoryKind kind = MemoryKind.fromPrefix(t.substring(0, colon));
        try {
            return new Location(kind, Integer.parseInt(t.substring(colon + 1)));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("bad location '" + text + "': index is not a number", e);
        }
    }

    /**
     * Whether this is the wildcard.
     *
     * @return {@code true} for {@link #ANY}
     */
    public boolean isAny() {
        return kind == null;
    }

    /**
     * The memory kind, treating the wildcard as host memory.
     *
     * @return the kind, never {@code null}
     */

    public MemoryKind kindOrCpu() {
        return kind == null ? MemoryKind.CPU : kind;
    }

    @Override
    public String toString() {
        return kind == null ? "*" : kind.prefix() + ":" + index;
    }
}
