package org.tent4j.platform.rocm;

import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;

import org.tent4j.platform.common.NativeStream;

/**
 * A non-blocking HIP stream: it does not serialize with the null stream, so copies on different streams
 * (one per transport lane) overlap.
 */
final class RocmStream extends NativeStream {
    private final HipRuntime hip;
    private final MemorySegment stream;

    RocmStream(HipRuntime hip, MemorySegment stream, int device, Consumer<NativeStream> forget) {
        super("rocm:" + device, forget);
        this.hip = hip;
        this.stream = stream;
    }

    @Override
    protected void enqueueCopy(MemorySegment dst, MemorySegment src, long length) {
        int rc = hip.memcpyAsync(dst, src, length, HipRuntime.MEMCPY_DEFAULT, stream);
        if (rc != HipRuntime.SUCCESS) {
            throw hip.error(rc, "hipMemcpyAsync(dst=0x" + Long.toHexString(dst.address()) + ", src=0x"
                    + Long.toHexString(src.address()) + ", " + length + " bytes, " + name() + ")");
        }
    }

    @Override
    protected void awaitQueued() {
        int rc = hip.streamSynchronize(stream);
        if (rc != HipRuntime.SUCCESS) {
            throw hip.error(rc, "hipStreamSynchronize(" + name() + ")");
        }
    }

    @Override
    protected void destroy() {
        int rc = hip.streamDestroy(stream);
        if (rc != HipRuntime.SUCCESS) {
            throw hip.error(rc, "hipStreamDestroy(" + name() + ")");
        }
    }
}
