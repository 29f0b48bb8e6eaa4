package org.tent4j.compat.buildershape;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Availability;
import org.tent4j.spi.BufferDescriptor;
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
 * A transport written against te-api as of commit a2dd85c, when the SPI's values became classes built through
 * builders and factories: it builds its capabilities, options, segment descriptors and buffer descriptors the way a
 * vendor does from then on. Compiled against that te-api jar by build-old-shape-transport.sh and committed, so
 * CompatibilityTest proves that a binary built against the builders still links and moves bytes when the values grow.
 *
 * <p>It resolves foreign names, as a plugin for another engine's wire does: {@code alias:<segment>} is the engine
 * {@code <segment>} of this JVM, described by a descriptor this plugin builds from the buffers that engine registered
 * with it. Data path: engines of one JVM; a slice is copied on an engine worker after the target's own
 * {@code checkRemoteAccess}.
 */
public final class BuilderShapeTransportProvider implements TransportProvider {
    public static final String ID = "buildershape";
    public static final String ALIAS = "alias:";
    private static final Map<String, TransportContext> ENGINES = new ConcurrentHashMap<>();
    private static final Map<String, Map<Integer, LocalBuffer>> BUFFERS = new ConcurrentHashMap<>();

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
        return TransportCapabilities.builder().memoryPath(MemoryKind.CPU, MemoryKind.CPU).sameHostOnly(true)
                .maxSliceSize(32 << 10).rank(45).build();
    }

    @Override
    public List<OptionSpec> options() {
        return List.of(OptionSpec.of("label", OptionSpec.Type.STRING, "builder", "published with every buffer"));
    }

    @Override
    public Transport create(TransportContext context) {
        String self = context.segmentName();
        ENGINES.put(self, context);
        Map<Integer, LocalBuffer> mine = BUFFERS.computeIfAbsent(self, k -> new ConcurrentHashMap<>());
        String label = context.options().getString("label");
        return new Transport() {
            @Override
            public String id() {
                return ID;
            }

            @Override
            public Optional<Map<String, String>> registerBuffer(LocalBuffer buffer) {
                mine.put(buffer.id(), buffer);
                return Optional.of(Map.of("label", label));
            }

            @Override
            public void unregisterBuffer(LocalBuffer buffer) {
                mine.remove(buffer.id());
            }

            @Override
            public Optional<SegmentDescriptor> resolveSegment(String segmentName) {
                if (!segmentName.startsWith(ALIAS)) {
                    return Optional.empty();
                }
                String real = segmentName.substring(ALIAS.length());
                TransportContext target = ENGINES.get(real);
                if (target == null) {
                    throw new TransferException(ErrorCode.UNKNOWN_SEGMENT, "buildershape: no engine '" + real
                            + "' in this JVM for '" + segmentName + "'");
                }
                List<BufferDescriptor> buffers = BUFFERS.getOrDefault(real, Map.of()).values().stream()
                        .map(b -> BufferDescriptor.builder().address(b.address()).length(b.length())
                                .location(b.location()).permission(b.permission()).transports(List.of(ID))
                                .attributes(Map.of(ID, Map.of("label", "alias"))).build())
                        .toList();
                SegmentDescriptor d = SegmentDescriptor.builder().name(segmentName).machineId(target.machineId())
                        .host(target.host()).transports(List.of(ID)).buffers(buffers).version(1).build();
                // read back through the accessors and toBuilder of a2dd85c, so a missing one fails linking here
                if (!d.toBuilder().build().name().equals(segmentName) || d.buffers().size() != buffers.size()) {
                    throw new IllegalStateException("descriptor read back wrong: " + d);
                }
                return Optional.of(d);
            }

            @Override
            public PeerConnection connect(SegmentDescriptor peer) {
                String real = peer.name().startsWith(ALIAS) ? peer.name().substring(ALIAS.length()) : peer.name();
                TransportContext target = ENGINES.get(real);
                if (target == null) {
                    throw new TransferException(ErrorCode.PEER_UNREACHABLE, "buildershape: no engine '" + real
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
                ENGINES.remove(self, context);
                BUFFERS.remove(self, mine);
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
