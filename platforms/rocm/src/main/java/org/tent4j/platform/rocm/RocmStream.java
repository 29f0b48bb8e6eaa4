package org.tent4j.platform.rocm;

import java.util.concurrent.atomic.AtomicBoolean;

import java.lang.foreign.MemorySegment;

import org.tent4j.platform.common.PlatformChecks;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.platform.DeviceStream;

/**
 * A non-blocking HIP stream: it does not serialize with the null stream, so copies on different streams
 * (one per transport lane) overlap.
 */
final class RocmStream implements DeviceStream {
    private final HipRuntime hip;
    private final RocmPlatform owner;
    private final MemorySegment stream;
    private final int device;
    private final AtomicBoolean closed = new AtomicBoolean();

    RocmStream(HipRuntime hip, RocmPlatform owner, MemorySegment stream, int device) {
        this.hip = hip;
        this.owner = owner;
        this.stream = stream;
        this.device = device;
    }

    int device() {
        return device;
    }

    @Override
    public void copyAsync(MemorySegment dst, MemorySegment src, long length) {
        ensureOpen();
        PlatformChecks.checkCopy(dst, src, length);
        if (length == 0) {
            return;
        }
        int rc = hip.memcpyAsync(dst, src, length, HipRuntime.MEMCPY_DEFAULT, stream);
        if (rc != HipRuntime.SUCCESS) {
            throw hip.error(rc, "hipMemcpyAsync(dst=0x" + Long.toHexString(dst.address()) + ", src=0x"
                    + Long.toHexString(src.address()) + ", " + length + " bytes, stream on rocm:" + device + ")");
        }
    }

    @Override
    public void synchronize() {
        ensureOpen();
        int rc = hip.streamSynchronize(stream);
        if (rc != HipRuntime.SUCCESS) {
            throw hip.error(rc, "hipStreamSynchronize(stream on rocm:" + device + ")");
        }
    }

    private void ensureOpen() {
        if (closed.get()) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "stream on rocm:" + device + " is closed");
        }
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            owner.forget(this);
            int rc = hip.streamDestroy(stream);
            if (rc != HipRuntime.SUCCESS) {
                throw hip.error(rc, "hipStreamDestroy(stream on rocm:" + device + ")");
            }
        }
    }
}
