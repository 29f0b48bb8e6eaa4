package org.tent4j.transport.tcp;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Consumer;

import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.EventExecutor;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.LocalFile;
import org.tent4j.spi.LocalFiles;

/**
 * Remote file segments (issue 12): the target side of a peer's READ or WRITE of one of this engine's registered
 * files. The engine does the file I/O ({@link LocalFiles}); this runs it on the engine's workers, never on an event
 * loop, between a pooled direct buffer and the file, and hands the outcome back to the connection's event loop. A
 * connection has at most {@link FileRequests#MAX_FILE_OPS} file requests in flight and all connections together
 * hold at most {@code max_file_buffer_bytes} of their buffers ({@link FileBufferBudget}); past either the connection
 * stops reading its peer. Answers stay in request order.
 */
final class FileServing {
    private final LocalFiles files;
    private final Executor workers;
    private final FileBufferBudget budget;

    FileServing(LocalFiles files, Executor workers, FileBufferBudget budget) {
        this.files = files;
        this.workers = workers;
        this.budget = budget;
    }

    /** The bytes of request buffers all connections of the transport may hold at once. */
    FileBufferBudget budget() {
        return budget;
    }

    /** Whether {@code address} names a file rather than memory; allocation-free. */
    boolean servesAddress(long address) {
        return LocalFiles.inFileSpace(address);
    }

    /** The checked file, or a TransferException naming file, offset and length. */
    LocalFile check(long address, long length, Opcode op) {
        return files.checkRemoteAccess(address, length, op);
    }

    /**
     * Runs the file I/O for {@code op} between {@code file} at {@code address} and {@code buffer}'s first
     * {@code length} bytes on a worker, then {@code done} on {@code loop} with {@code null} or the failure.
     */
    void run(Opcode op, LocalFile file, long address, ByteBuf buffer, int length, EventExecutor loop,
             Consumer<TransferException> done) {
        MemorySegment window = MemorySegment.ofBuffer(buffer.nioBuffer(0, length));
        Runnable io = () -> {
            TransferException failure = null;
            try {
                if (op == Opcode.READ) {
                    files.read(file, address, window);
                } else {
                    files.write(file, address, window);
                }
            } catch (TransferException e) {
                failure = e;
            } catch (RuntimeException e) {
                failure = new TransferException(ErrorCode.INTERNAL, op + " of file " + file.path() + " at offset "
                        + (address - file.address()) + ", length " + length + " failed: " + e, e);
            }
            TransferException f = failure;
            try {
                loop.execute(() -> done.accept(f));
            } catch (RejectedExecutionException e) {
                // the transport is closing: its event loops are gone and with them the connection
            }
        };
        try {
            workers.execute(io);
        } catch (RejectedExecutionException e) {
            loop.execute(() -> done.accept(new TransferException(ErrorCode.INTERNAL, op + " of file " + file.path()
                    + ": the engine is closing")));
        }
    }
}
