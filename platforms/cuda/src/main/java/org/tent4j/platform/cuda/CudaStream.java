package org.tent4j.platform.cuda;

import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;

import org.tent4j.platform.common.NativeStream;

/**
 * A non-blocking CUDA stream: it does not serialize with the legacy default stream, so copies on different streams
 * (one per transport lane) overlap.
 */
final class CudaStream extends NativeStream {
    private final CudaRuntime cuda;
    private final MemorySegment stream;

    CudaStream(CudaRuntime cuda, MemorySegment stream, int device, Consumer<NativeStream> forget) {
        super("cuda:" + device, forget);
        this.cuda = cuda;
        this.stream = stream;
    }

    @Override
    protected void enqueueCopy(MemorySegment dst, MemorySegment src, long length) {
        int rc = cuda.memcpyAsync(dst, src, length, CudaRuntime.MEMCPY_DEFAULT, stream);
        if (rc != CudaRuntime.SUCCESS) {
            throw cuda.error(rc, "cudaMemcpyAsync(dst=0x" + Long.toHexString(dst.address()) + ", src=0x"
                    + Long.toHexString(src.address()) + ", " + length + " bytes, " + name() + ")");
        }
    }

    @Override
    protected void awaitQueued() {
        int rc = cuda.streamSynchronize(stream);
        if (rc != CudaRuntime.SUCCESS) {
            throw cuda.error(rc, "cudaStreamSynchronize(" + name() + ")");
        }
    }

    @Override
    protected void destroy() {
        int rc = cuda.streamDestroy(stream);
        if (rc != CudaRuntime.SUCCESS) {
            throw cuda.error(rc, "cudaStreamDestroy(" + name() + ")");
        }
    }
}
