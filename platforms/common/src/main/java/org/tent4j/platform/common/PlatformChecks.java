package org.tent4j.platform.common;

import java.lang.foreign.MemorySegment;

import org.slf4j.Logger;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;

/** The argument checks every native device platform makes, with the same messages on each. */
public final class PlatformChecks {
    private PlatformChecks() {
    }

    /**
     * Refuses a device index outside {@code [0, count)}: {@code device cuda:4 does not exist (2 CUDA devices)}.
     *
     * @param prefix the location prefix ({@code cuda}, {@code rocm}, {@code npu})
     * @param unit   what one device is called in the message ({@code CUDA device}, {@code NPU})
     */
    public static void checkDevice(int device, int count, String prefix, String unit) {
        if (device < 0 || device >= count) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "device " + prefix + ":" + device
                    + " does not exist (" + count + " " + unit + (count == 1 ? "" : "s") + ")");
        }
    }

    public static void checkSize(long size) {
        if (size <= 0) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "size must be > 0, got " + size);
        }
    }

    /** Refuses a copy that does not fit either segment, or that names Java heap memory a device cannot reach. */
    public static void checkCopy(MemorySegment dst, MemorySegment src, long length) {
        if (length < 0 || length > dst.byteSize() || length > src.byteSize()) {
            throw new TransferException(ErrorCode.OUT_OF_BOUNDS, "copy of " + length + " bytes from 0x"
                    + Long.toHexString(src.address()) + " (+" + src.byteSize() + ") to 0x"
                    + Long.toHexString(dst.address()) + " (+" + dst.byteSize() + ") does not fit");
        }
        if (!dst.isNative() || !src.isNative()) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT,
                    "device copies need native memory segments, not Java heap arrays");
        }
    }

    /** Refuses any use of a closed platform: {@code cuda platform is closed}. */
    public static void ensureOpen(boolean closed, String platform) {
        if (closed) {
            throw new TransferException(ErrorCode.ENGINE_CLOSED, platform + " platform is closed");
        }
    }

    /** Runs one release step of a closing platform; a failure is logged so the remaining steps still run. */
    public static void quietly(Logger log, Runnable action, String what) {
        try {
            action.run();
        } catch (RuntimeException e) {
            log.warn("releasing {} on close failed: {}", what, e.getMessage());
        }
    }
}
