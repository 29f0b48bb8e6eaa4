package org.tent4j.spi;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;

import org.tent4j.spi.platform.DevicePlatform;

/** What the engine hands a transport when it creates it. */
public interface TransportContext {
    /** This engine's segment name. */
    String segmentName();

    /** The host this engine advertises to peers; listeners should bind to it. */
    String host();

    /** Identifies this machine; see {@link SegmentDescriptor#machineId()}. */
    String machineId();

    /** The transport's options ({@code transports.<id>.*}), parsed and validated. */
    OptionValues options();

    /** The engine's registrations, for checking every peer access. */
    LocalMemory localMemory();

    /** The engine's worker threads, for blocking work (copies, waits). Do not block them indefinitely. */
    Executor workers();

    /** For timeouts and periodic work. */
    ScheduledExecutorService scheduler();

    /** Request/response to peers over the engine's control plane, for handshakes. */
    ControlPlane controlPlane();

    /** How long a slice may wait for a peer when it carries no earlier deadline. */
    Duration transferTimeout();

    /** The engine's clock; use it for deadlines and timeouts so they follow the engine's (possibly virtual) time. */
    default TimeSource clock() {
        return TimeSource.SYSTEM;
    }

    /** Where the transport reports its own metrics. */
    default TransportMetrics metrics() {
        return TransportMetrics.NONE;
    }

    /**
     * The device platforms (CUDA, ROCm, Ascend…) the engine found available here, opened on first call and closed by
     * the engine; one per memory kind. A transport that moves device memory uses these rather than loading its own.
     */
    default List<DevicePlatform> devicePlatforms() {
        return List.of();
    }

    /**
     * How connections to and from peers are secured (token handshake, TLS); a transport that listens on a port of
     * its own applies it to every connection there. None unless the engine sets {@code security.*}.
     */
    default SecuritySettings security() {
        return SecuritySettings.NONE;
    }

    // remote file segments (issue 12): begin
    /**
     * The engine's registered files, for a network transport that serves peers' requests for them (the target reads
     * or writes the file on the peer's behalf). {@link LocalFiles#NONE} where the engine offers none.
     */
    default LocalFiles localFiles() {
        return LocalFiles.NONE;
    }
    // remote file segments (issue 12): end
}
