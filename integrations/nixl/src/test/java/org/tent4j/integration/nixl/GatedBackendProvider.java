package org.tent4j.integration.nixl;

import java.lang.foreign.MemorySegment;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;

import org.tent4j.api.Opcode;
import org.tent4j.integration.nixl.spi.Backend;
import org.tent4j.integration.nixl.spi.BackendContext;
import org.tent4j.integration.nixl.spi.BackendProvider;
import org.tent4j.integration.nixl.spi.OptionSpec;
import org.tent4j.integration.nixl.spi.Progress;
import org.tent4j.integration.nixl.spi.Span;

/**
 * A loopback backend whose transfers finish only when the test opens {@link #GATE}, so in-flight states (repost,
 * release while in flight) are reached without timing. It copies for real once opened. Option {@code fail_start}
 * makes its creation fail, for the surfaced-cause test; {@code abortable=false} makes release refuse while in flight.
 */
public final class GatedBackendProvider implements BackendProvider {
    static volatile CountDownLatch GATE = new CountDownLatch(1);

    @Override public String id() { return "test-gated"; }
    @Override public boolean supportsRemote() { return false; }
    @Override public boolean supportsLocal() { return true; }
    @Override public boolean supportsNotifications() { return false; }
    @Override public Set<MemoryType> memoryTypes() { return EnumSet.of(MemoryType.DRAM); }

    @Override
    public List<OptionSpec> options() {
        return List.of(new OptionSpec("fail_start", OptionSpec.Type.BOOLEAN, "false", "throw from create"),
                new OptionSpec("abortable", OptionSpec.Type.BOOLEAN, "true", "whether release stops an in-flight request"));
    }

    @Override
    public Backend create(BackendContext context) throws Exception {
        if (context.options().bool("fail_start")) {
            throw new java.io.IOException("device /dev/gated0 missing");
        }
        boolean abortable = context.options().bool("abortable");
        return new Backend() {
            final class Req {
                final List<Span> from;
                final List<Span> to;
                volatile boolean posted;
                volatile boolean aborted;

                Req(List<Span> from, List<Span> to) {
                    this.from = from;
                    this.to = to;
                }
            }

            @Override public Object register(Descriptor region, MemoryType type) { return region; }
            @Override public void deregister(Object region) { }
            @Override public Object loadLocal(Object region) { return region; }

            @Override
            public Object prepare(Opcode op, List<Span> local, List<Span> remote, String agent) {
                return op == Opcode.WRITE ? new Req(local, remote) : new Req(remote, local);
            }

            @Override
            public void post(Object request, byte[] notification) {
                ((Req) request).posted = true;
            }

            @Override
            public Progress check(Object request) {
                Req r = (Req) request;
                if (r.aborted) {
                    return Progress.failed(NixlStatus.CANCELED, "aborted", System.nanoTime());
                }
                if (GATE.getCount() > 0) {
                    return Progress.inProgress();
                }
                for (int i = 0; i < r.from.size(); i++) {
                    MemorySegment.copy(MemorySegment.ofAddress(r.from.get(i).address()).reinterpret(r.from.get(i).length()), 0,
                            MemorySegment.ofAddress(r.to.get(i).address()).reinterpret(r.to.get(i).length()), 0, r.from.get(i).length());
                }
                return Progress.done(System.nanoTime());
            }

            @Override
            public boolean release(Object request) {
                ((Req) request).aborted = abortable;
                return abortable || GATE.getCount() == 0;
            }

            @Override public void close() { }
        };
    }
}
