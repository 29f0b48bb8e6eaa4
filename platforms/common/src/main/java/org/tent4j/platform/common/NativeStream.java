package org.tent4j.platform.common;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.platform.DeviceStream;

/**
 * A device stream of a native runtime: the argument checks, the closed state and the once-only close are shared; a
 * platform supplies the three runtime calls. Names in messages read {@code stream on cuda:0}.
 */
public abstract class NativeStream implements DeviceStream {
    private final String name;
    private final Consumer<NativeStream> forget;
    private final AtomicBoolean closed = new AtomicBoolean();

    /**
     * @param location where the stream runs, as in messages ({@code cuda:0}, {@code npu:1})
     * @param forget   tells the owning platform the stream is closed (it closes the rest on its own close)
     */
    protected NativeStream(String location, Consumer<NativeStream> forget) {
        this.name = "stream on " + location;
        this.forget = forget;
    }

    /** Queues {@code length > 0} bytes from {@code src} to {@code dst}; both are checked native segments. */
    protected abstract void enqueueCopy(MemorySegment dst, MemorySegment src, long length);

    /** Waits for everything queued; throws naming the runtime call. */
    protected abstract void awaitQueued();

    /** Destroys the native stream; throws naming the runtime call. */
    protected abstract void destroy();

    /** {@code stream on cuda:0}, for the runtime calls' messages. */
    protected final String name() {
        return name;
    }

    @Override
    public final void copyAsync(MemorySegment dst, MemorySegment src, long length) {
        ensureOpen();
        PlatformChecks.checkCopy(dst, src, length);
        if (length == 0) {
            return;
        }
        enqueueCopy(dst, src, length);
    }

    @Override
    public final void synchronize() {
        ensureOpen();
        awaitQueued();
    }

    private void ensureOpen() {
        if (closed.get()) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, name + " is closed");
        }
    }

    @Override
    public final void close() {
        if (closed.compareAndSet(false, true)) {
            forget.accept(this);
            destroy();
        }
    }
}
