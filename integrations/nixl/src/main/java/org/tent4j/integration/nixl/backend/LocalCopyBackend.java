package org.tent4j.integration.nixl.backend;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;

import org.tent4j.api.Opcode;
import org.tent4j.integration.nixl.Descriptor;
import org.tent4j.integration.nixl.MemoryType;
import org.tent4j.integration.nixl.NixlException;
import org.tent4j.integration.nixl.NixlStatus;
import org.tent4j.integration.nixl.spi.Backend;
import org.tent4j.integration.nixl.spi.Progress;
import org.tent4j.integration.nixl.spi.Span;

/**
 * Same-process copies between registered host regions: {@link MemorySegment#copy} straight from source to
 * destination, inline for small requests and on one copy thread for large ones. A request in flight on that thread is
 * aborted between descriptors.
 */
final class LocalCopyBackend implements Backend {
    private final String agent;
    private final long inlineLimit;
    private final ExecutorService copier;

    LocalCopyBackend(String agent, long inlineLimit) {
        this.agent = agent;
        this.inlineLimit = inlineLimit;
        this.copier = Executors.newSingleThreadExecutor(Thread.ofPlatform().daemon().name("nixl-local-copy-" + agent).factory());
    }

    private static final class Request {
        final MemorySegment[] from;
        final MemorySegment[] to;
        final long bytes;
        volatile Progress progress = Progress.inProgress();
        volatile boolean abort;

        Request(MemorySegment[] from, MemorySegment[] to, long bytes) {
            this.from = from;
            this.to = to;
            this.bytes = bytes;
        }

        void run() {
            for (int i = 0; i < from.length; i++) {
                if (abort) {
                    progress = Progress.failed(NixlStatus.CANCELED, "local-copy: released while in flight, after " + i + " of "
                            + from.length + " descriptors", System.nanoTime());
                    return;
                }
                MemorySegment.copy(from[i], 0, to[i], 0, from[i].byteSize());
            }
            progress = Progress.done(System.nanoTime());
        }
    }

    @Override
    public Object register(Descriptor region, MemoryType type) {
        if (type != MemoryType.DRAM) {
            throw new NixlException(NixlStatus.NOT_SUPPORTED, "local-copy registers DRAM only, not " + type);
        }
        return MemorySegment.ofAddress(region.address()).reinterpret(region.length());
    }

    @Override
    public void deregister(Object region) {
    }

    @Override
    public Object loadLocal(Object region) {
        return region;
    }

    @Override
    public Object prepare(Opcode op, List<Span> local, List<Span> remote, String peer) {
        if (!peer.equals(agent)) {
            throw new NixlException(NixlStatus.NOT_SUPPORTED, "local-copy moves data inside agent '" + agent + "' only, not to '" + peer + "'");
        }
        int n = local.size();
        MemorySegment[] from = new MemorySegment[n];
        MemorySegment[] to = new MemorySegment[n];
        long bytes = 0;
        for (int i = 0; i < n; i++) {
            MemorySegment l = MemorySegment.ofAddress(local.get(i).address()).reinterpret(local.get(i).length());
            MemorySegment r = MemorySegment.ofAddress(remote.get(i).address()).reinterpret(remote.get(i).length());
            from[i] = op == Opcode.WRITE ? l : r;
            to[i] = op == Opcode.WRITE ? r : l;
            bytes += l.byteSize();
        }
        return new Request(from, to, bytes);
    }

    @Override
    public void post(Object request, byte[] notification) {
        if (notification != null) {
            throw new NixlException(NixlStatus.NOT_SUPPORTED, "local-copy sends no notifications");
        }
        Request r = (Request) request;
        r.abort = false;
        r.progress = Progress.inProgress();
        if (r.bytes <= inlineLimit) {
            r.run();
            return;
        }
        try {
            copier.execute(r::run);
        } catch (RejectedExecutionException e) {
            throw new NixlException(NixlStatus.BACKEND, "local-copy of agent '" + agent + "' is closed");
        }
    }

    @Override
    public Progress check(Object request) {
        return ((Request) request).progress;
    }

    @Override
    public boolean release(Object request) {
        Request r = (Request) request;
        r.abort = true;
        // a copy already running finishes its current descriptor; the caller learns it is not stopped yet
        return r.progress.state().isTerminal();
    }

    @Override
    public void close() {
        copier.shutdownNow();
    }
}
