package org.tent4j.transport.faulty;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.MemoryAllocator;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.TransportProvider;

/**
 * The faulty transport of one engine: its delegate does the real work; this class translates what peers see.
 *
 * <p>The delegate publishes (and looks up) attributes under its own id, but the engine publishes whatever this
 * transport returns under {@code faulty}. So descriptors are rewritten before they reach the delegate: the
 * {@code faulty} entries become the delegate's, and entries the peer's own instance of the delegate published are
 * dropped (they belong to another instance, e.g. another tcp port).
 */
final class FaultInjectingTransport implements Transport {
    private static final Logger LOG = LoggerFactory.getLogger(FaultInjectingTransport.class);

    private final TransportContext context;
    private final FaultPlan plan;
    private final String delegateId;
    private final Transport delegate;
    private final TransportCapabilities capabilities;
    private final Set<FaultInjectingConnection> connections = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    FaultInjectingTransport(TransportContext context, FaultPlan plan, TransportProvider provider, Transport delegate) {
        this.context = context;
        this.plan = plan;
        this.delegateId = provider.id();
        this.delegate = delegate;
        TransportCapabilities c = delegate.capabilities().orElse(provider.capabilities());
        // the delegate's abilities, but never its rank: faulty must not outrank the transport it wraps
        this.capabilities = c.toBuilder().rank(FaultInjectingTransportProvider.RANK).build();
        LOG.info("faulty transport of segment '{}' wraps '{}' with {}", context.segmentName(), delegateId, plan);
    }

    @Override
    public String id() {
        return FaultInjectingTransportProvider.ID;
    }

    @Override
    public Optional<TransportCapabilities> capabilities() {
        return Optional.of(capabilities);
    }

    @Override
    public Map<String, String> segmentAttributes() {
        return delegate.segmentAttributes();
    }

    @Override
    public Optional<Map<String, String>> registerBuffer(LocalBuffer buffer) {
        return delegate.registerBuffer(buffer);
    }

    @Override
    public void unregisterBuffer(LocalBuffer buffer) {
        delegate.unregisterBuffer(buffer);
    }

    @Override
    public Optional<MemoryAllocator> allocator() {
        return delegate.allocator();
    }

    @Override
    public PeerConnection connect(SegmentDescriptor peer) {
        if (closed) {
            throw new TransferException(ErrorCode.ENGINE_CLOSED, "faulty transport of segment '"
                    + context.segmentName() + "' is closed; cannot connect to segment '" + peer.name() + "'");
        }
        PeerConnection inner = delegate.connect(rewrite(peer));
        FaultInjectingConnection c = new FaultInjectingConnection(this, plan, inner, context.scheduler(), peer.name(),
                capabilities.cancellation());
        connections.add(c);
        if (closed) {
            c.close();
        }
        return c;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (FaultInjectingConnection c : connections) {
            c.close();
        }
        delegate.close();
    }

    void connectionClosed(FaultInjectingConnection c) {
        connections.remove(c);
    }

    String delegateId() {
        return delegateId;
    }

    /** {@code peer} as the delegate expects it: faulty's entries under the delegate's id. */
    SegmentDescriptor rewrite(SegmentDescriptor peer) {
        String faulty = FaultInjectingTransportProvider.ID;
        List<String> transports = new ArrayList<>();
        for (String t : peer.transports()) {
            if (!t.equals(delegateId)) {
                transports.add(t.equals(faulty) ? delegateId : t);
            }
        }
        Map<String, Map<String, String>> segmentAttributes = new HashMap<>(peer.transportAttributes());
        segmentAttributes.remove(delegateId);
        Map<String, String> own = segmentAttributes.remove(faulty);
        if (own != null) {
            segmentAttributes.put(delegateId, own);
        }
        List<BufferDescriptor> buffers = new ArrayList<>(peer.buffers().size());
        for (BufferDescriptor b : peer.buffers()) {
            buffers.add(rewrite(b));
        }
        return SegmentDescriptor.builder().name(peer.name()).machineId(peer.machineId()).host(peer.host())
                .controlPort(peer.controlPort()).transports(transports).transportAttributes(segmentAttributes)
                .buffers(buffers).version(peer.version()).build();
    }

    /** One buffer as the delegate expects it. */
    BufferDescriptor rewrite(BufferDescriptor buffer) {
        String faulty = FaultInjectingTransportProvider.ID;
        List<String> transports = new ArrayList<>();
        for (String t : buffer.transports()) {
            if (!t.equals(delegateId)) {
                transports.add(t.equals(faulty) ? delegateId : t);
            }
        }
        Map<String, Map<String, String>> attributes = new HashMap<>(buffer.attributes());
        attributes.remove(delegateId);
        Map<String, String> own = attributes.remove(faulty);
        if (own != null) {
            attributes.put(delegateId, own);
        }
        return BufferDescriptor.builder().address(buffer.address()).length(buffer.length())
                .location(buffer.location()).permission(buffer.permission()).transports(transports)
                .attributes(attributes).build();
    }
}
