package org.tent4j.runtime;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Availability;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Slice;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.TransportProvider;

/**
 * A transport for engines of one JVM that copies on a worker thread, checking the target's registrations exactly as a
 * network target would. It exists so runtime tests exercise slicing, selection and completion without sockets.
 * Option {@code fail_after} makes slices fail once that many have been posted (for failure tests).
 */
public final class InProcessTransportProvider implements TransportProvider {
    static final Map<String, TransportContext> TARGETS = new ConcurrentHashMap<>();
    static final AtomicLong POSTED = new AtomicLong();

    @Override public String id() { return "inproc"; }
    @Override public Availability availability() { return Availability.available(); }

    @Override
    public TransportCapabilities capabilities() {
        return new TransportCapabilities(TransportCapabilities.hostOnly(), true, false, 256 << 10, 50);
    }

    @Override
    public List<OptionSpec> options() {
        return List.of(OptionSpec.of("fail_after", OptionSpec.Type.LONG, -1, "fail every slice after this many were posted"));
    }

    @Override
    public Transport create(TransportContext context) {
        TARGETS.put(context.segmentName(), context);
        long failAfter = context.options().getLong("fail_after");
        return new Transport() {
            @Override public String id() { return "inproc"; }

            @Override
            public PeerConnection connect(SegmentDescriptor peer) {
                TransportContext target = TARGETS.get(peer.name());
                if (target == null) {
                    throw new TransferException(ErrorCode.PEER_UNREACHABLE, "no in-process engine '" + peer.name() + "'");
                }
                return new PeerConnection() {
                    @Override
                    public void post(Slice s) {
                        long n = POSTED.incrementAndGet();
                        context.workers().execute(() -> {
                            if (failAfter >= 0 && n > failAfter) {
                                s.fail(ErrorCode.PEER_FAILED, "injected failure");
                                return;
                            }
                            try {
                                LocalBuffer remote = target.localMemory().checkRemoteAccess(s.remoteAddress(), s.length(), s.opcode());
                                MemorySegment r = remote.segment();
                                long roff = s.remoteAddress() - remote.address();
                                MemorySegment l = s.localBuffer().segment();
                                if (s.opcode() == Opcode.WRITE) {
                                    MemorySegment.copy(l, s.localOffset(), r, roff, s.length());
                                } else {
                                    MemorySegment.copy(r, roff, l, s.localOffset(), s.length());
                                }
                                s.complete();
                            } catch (TransferException e) {
                                s.fail(e.code(), e.getMessage());
                            }
                        });
                    }

                    @Override public boolean isOpen() { return true; }
                    @Override public void close() { }
                };
            }

            @Override
            public void close() {
                TARGETS.remove(context.segmentName(), context);
            }
        };
    }
}
