package org.tent4j.platform.cuda;

import java.util.concurrent.atomic.AtomicBoolean;

import java.lang.foreign.MemorySegment;

import org.tent4j.platform.common.PlatformChecks;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.platform.DeviceStream;

/**
 * A non-blocking CUDA stream: it does not serialize with the legacy default stream, so copies on different streams
 * (one per transport lane) overlap.
 */
final class CudaStream implements DeviceStream {
    private final CudaRuntime cuda;
    private final CudaPlatform owner;
    private final MemorySegment stream;
    private final int device;
    private final AtomicBoolean closed = new AtomicBoolean();

    CudaStream(CudaRuntime cuda, CudaPlatform owner, MemorySegment stream, int device) {
        this.cuda = cuda;
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
        int rc = cuda.memcpyAsync(dst, src, length, CudaRuntime.MEMCPY_DEFAULT, stream);
        if (rc != CudaRuntime.SUCCESS) {
            throw cuda.error(rc, "cudaMemcpyAsync(dst=0x" + Long.toHexString(dst.address()) + ", src=0x"
                    + Long.toHexString(src.address()) + ", " + length + " bytes, stream on cuda:" + device + ")");
        }
    }

    @Override
    public void synchronize() {
        ensureOpen();
        int rc = cuda.streamSynchronize(stream);
        if (rc != CudaRuntime.SUCCESS) {
            throw cuda.error(rc, "cudaStreamSynchronize(stream on cuda:" + device + ")");
        }
    }

    private void ensureOpen() {
        if (closed.get()) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "stream on cuda:" + device + " is closed");
        }
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            owner.forget(this);
            int rc = cuda.streamDestroy(stream);
            if (rc != CudaRuntime.SUCCESS) {
                throw cuda.error(rc, "cudaStreamDestroy(stream on cuda:" + device + ")");
            }
        }
    }
}
