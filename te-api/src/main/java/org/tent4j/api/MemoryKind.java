package org.tent4j.api;

import java.util.Locale;

/** The kind of memory a buffer lives in; the prefix of a {@link Location} string. */
public enum MemoryKind {
    CPU("cpu"), CUDA("cuda"), ROCM("rocm"), NPU("npu"), FILE("file");

    private final String prefix;

    MemoryKind(String prefix) {
        this.prefix = prefix;
    }

    public String prefix() {
        return prefix;
    }

    /** Device memory (anything but host DRAM and files). */
    public boolean isDevice() {
        return this == CUDA || this == ROCM || this == NPU;
    }

    public static MemoryKind fromPrefix(String prefix) {
        String p = prefix.toLowerCase(Locale.ROOT);
        for (MemoryKind k : values()) {
            if (k.prefix.equals(p)) {
                return k;
            }
        }
        throw new IllegalArgumentException("unknown memory kind '" + prefix + "' (expected cpu, cuda, rocm, npu or file)");
    }
}
