package org.tent4j.api;

import java.util.Locale;

/** The kind of memory a buffer lives in; the prefix of a {@link Location} string. */
public enum MemoryKind {
    /** Host DRAM. */
    CPU("cpu"),
    /** NVIDIA GPU memory. */
    CUDA("cuda"),
    /** AMD GPU memory. */
    ROCM("rocm"),
    /** Ascend NPU memory. */
    NPU("npu"),
    /** A registered file or block device ({@link TransferEngine#registerFile}). */
    FILE("file");

    private final String prefix;

    MemoryKind(String prefix) {
        this.prefix = prefix;
    }

    /**
     * The prefix of a {@link Location} string.
     *
     * @return e.g. {@code cuda}
     */
    public String prefix() {
        return prefix;
    }

    /**
     * Device memory (anything but host DRAM and files).
     *
     * @return {@code true} for CUDA, ROCM and NPU
     */
    public boolean isDevice() {
        return this == CUDA || this == ROCM || this == NPU;
    }

    /**
     * The kind a {@link Location} prefix names, any case.
     *
     * @param prefix e.g. {@code cpu}
     * @return the kind
     * @throws IllegalArgumentException naming the prefix when it names none
     */
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
