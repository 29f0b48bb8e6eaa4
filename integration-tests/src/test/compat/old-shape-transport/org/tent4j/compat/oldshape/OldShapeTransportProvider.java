package org.tent4j.compat.oldshape;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Availability;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.MemoryAllocator;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Slice;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.TransportProvider;

/**
 * A transport written against te-api 0.1 (commit 68b5e3a) exactly as a vendor would have: capabilities and allocations
 * built positionally (they were records then), record accessors read back. It is compiled against that old te-api jar
 * by integration-tests/src/test/compat/build-old-shape-transport.sh and the jar is committed, so CompatibilityTest
 * proves that a binary built before the SPI changed still links and moves bytes with the current runtime.
 *
 * <p>Data path: engines of one JVM; a slice is copied on an engine worker after the target's own
 * {@code checkRemoteAccess}, as a network target would check it.
 */
public final class OldShapeTransportProvider implements TransportProvider {
    public static final String ID = "oldshape";
    private static final Map<String, TransportContext> ENGINES = new ConcurrentHashMap<>();

    @Override
    public String id() {
        return ID;
    }

    @Override
    public Availability availability() {
        return Availability.available();
    }

    @Override
    public TransportCapabilities capabilities() {
        TransportCapabilities c = new TransportCapabilities(TransportCapabilities.hostOnly(), true, false, 64 << 10, 40);
        // read back through the record accessors of 0.1, so a missing accessor fails linking here
        if (!c.supports(MemoryKind.CPU, MemoryKind.CPU) || c.maxSliceSize() != 64 << 10 || !c.sameHostOnly()) {
            throw new IllegalStateException("capabilities read back wrong: " + c);
        }
        return c;
    }

    @Override
    public List<OptionSpec> options() {
        return List.of(OptionSpec.of("label", OptionSpec.Type.STRING, "old", "published with every allocation"));
    }

    @Override
    public Transport create(TransportContext context) {
        ENGINES.put(context.segmentName(), context);
        String label = context.options().getString("label");
        AtomicLong allocations = new AtomicLong();
        return new Transport() {
            @Override
            public String id() {
                return ID;
            }

            @Override
            public Optional<Map<String, String>> registerBuffer(LocalBuffer buffer) {
                return Optional.of(Map.of("label", label));
            }

            @Override
            public Optional<MemoryAllocator> allocator() {
                return Optional.of(new MemoryAllocator() {
                    @Override
                    public boolean supports(Location location) {
                        return location.isAny() || location.kindOrCpu() == MemoryKind.CPU;
                    }

                    @Override
                    public Allocation allocate(long size, Location location) {
                        Arena arena = Arena.ofShared();
                        MemorySegment memory = arena.allocate(size, 4096);
                        Allocation a = new Allocation(memory, Map.of("made_by", ID,
                                "n", Long.toString(allocations.incrementAndGet())), arena::close);
                        if (a.segment() != memory || !a.backing().containsKey("made_by")) {
                            throw new IllegalStateException("allocation read back wrong: " + a);
                        }
                        return a;
                    }
                });
            }

            @Override
            public PeerConnection connect(SegmentDescriptor peer) {
                TransportContext target = ENGINES.get(peer.name());
                if (target == null) {
                    throw new TransferException(ErrorCode.PEER_UNREACHABLE, "oldshape: no engine '" + peer.name()
                            + "' in this JVM");
                }
                return new PeerConnection() {
                    @Override
                    public void post(Slice s) {
                        context.workers().execute(() -> copy(target, s));
                    }

                    @Override
                    public boolean isOpen() {
                        return true;
                    }

                    @Override
                    public void close() {
                    }
                };
            }

            @Override
            public void close() {
                ENGINES.remove(context.segmentName(), context);
            }
        };
    }

    private static void copy(TransportContext target, Slice s) {
        try {
            LocalBuffer remote = target.localMemory().checkRemoteAccess(s.remoteAddress(), s.length(), s.opcode());
            long remoteOffset = s.remoteAddress() - remote.address();
            if (s.opcode() == Opcode.WRITE) {
                MemorySegment.copy(s.localBuffer().segment(), s.localOffset(), remote.segment(), remoteOffset, s.length());
            } else {
                MemorySegment.copy(remote.segment(), remoteOffset, s.localBuffer().segment(), s.localOffset(), s.length());
            }
            s.complete();
        } catch (TransferException e) {
            s.fail(e.code(), e.getMessage());
        }
    }
}
