package org.tent4j.transport.faulty;

import java.time.Duration;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;

import org.tent4j.spi.ControlPlane;
import org.tent4j.spi.LocalMemory;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.TransportContext;

/**
 * The wrapped transport's context: the engine's, with the delegate's default options, and a control plane whose
 * service names carry a {@code faulty.} prefix. The prefix matters when the engine also runs the delegate itself:
 * both would otherwise serve (and overwrite) the same {@code <id>.<name>} handshake service.
 */
final class DelegateContext implements TransportContext {
    private final TransportContext engine;
    private final OptionValues options;
    private final ControlPlane controlPlane;

    DelegateContext(TransportContext engine, OptionValues options, String delegateId) {
        this.engine = engine;
        this.options = options;
        ControlPlane inner = engine.controlPlane();
        String prefix = FaultInjectingTransportProvider.ID + ".";
        this.controlPlane = new ControlPlane() {
            @Override
            public void serve(String service, Handler handler) {
                inner.serve(prefix + service, handler);
            }

            @Override
            public byte[] call(SegmentDescriptor peer, String service, byte[] request, Duration timeout) {
                return inner.call(peer, prefix + service, request, timeout);
            }

            @Override
            public String toString() {
                return "control plane of " + delegateId + " wrapped by faulty";
            }
        };
    }

    @Override public String segmentName() { return engine.segmentName(); }
    @Override public String host() { return engine.host(); }
    @Override public String machineId() { return engine.machineId(); }
    @Override public OptionValues options() { return options; }
    @Override public LocalMemory localMemory() { return engine.localMemory(); }
    @Override public Executor workers() { return engine.workers(); }
    @Override public ScheduledExecutorService scheduler() { return engine.scheduler(); }
    @Override public ControlPlane controlPlane() { return controlPlane; }
    @Override public Duration transferTimeout() { return engine.transferTimeout(); }
}
