package org.tent4j.spi;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;

import org.tent4j.api.ConfigException;
import org.tent4j.spi.platform.DevicePlatform;

/**
 * What the engine hands a transport when it creates it. Valid from {@link TransportProvider#create} until the
 * transport's {@link Transport#close()} returns; every method is thread-safe, and the getters are cheap (the
 * context's parts are made once), so a transport may keep the context or the parts it needs. The executors belong to
 * the engine: a transport submits work to them but never shuts them down.

 */
public interface TransportContext {
    /**
     * This engine's segment name.
     *
     * @return the name peers open this engine by
     */
    String segmentName();

    /**
     * The host this engine advertises to peers; listeners should bind to it.
     *
     * @return a host name or address
     */
    String host();

    /**
     * Identifies this machine; see {@link SegmentDescriptor#machineId()}.
     *
     * @return the machine id
     */
    String machineId();

    /**
     * The transport's options ({@code transports.<id>.*}), parsed and validated.
     *
     * @return the values, checked against {@link TransportProvider#options()}
     */
    OptionValues options();

    /**
     * The engine's registrations, for checking every peer access.
     *
     * @return the live view; a lookup reflects registrations made and removed since
     */
    LocalMemory localMemory();

    /**
     * The engine's worker threads, for blocking work (copies, waits). Do not block them indefinitely.
     *
     * @return a shared pool of {@code workers} threads; a transport that needs a thread of its own makes it
     */
    Executor workers();

    /**
     * For timeouts and periodic work.
     *
     * @return a shared scheduler; tasks on it must be short and must not block
     */
    ScheduledExecutorService scheduler();

    /**
     * Request/response to peers over the engine's control plane, for handshakes.
     *
     * @return the control plane
     */
    ControlPlane controlPlane();

    /**
     * How long a slice may wait for a peer when it carries no earlier deadline.
     *
     * @return the engine's {@code transfer.timeout}
     */
    Duration transferTimeout();

    /**
     * The engine's clock; use it for deadlines and timeouts so they follow the engine's (possibly virtual) time.
     *
     * @return the clock
     */
    default TimeSource clock() {
        return TimeSource.SYSTEM;
    }

    /**
     * Where the transport reports its own metrics.
     *
     * @return the sink; {@link TransportMetrics#NONE} when the engine exports none
     */
    default TransportMetrics metrics() {
        return TransportMetrics.NONE;
    }

    /**
     * The device platforms (CUDA, ROCm, Ascend…) the engine found available here, opened on first call and closed by
     * the engine; one per memory kind. A transport that moves device memory uses these rather than loading its own.
     *
     * @return the platforms, possibly none; the transport must not close them
     */
    default List<DevicePlatform> devicePlatforms() {
        return List.of();
    }

    /**
     * How connections to and from peers are secured (token handshake, TLS); a transport that listens on a port of
     * its own applies it to every connection there. None unless the engine sets {@code security.*}.
     *
     * @return the settings
     */
    default SecuritySettings security() {
        return SecuritySettings.NONE;
    }

    /**
     * Opens a metadata store with the engine's metadata plugins, chosen by the URI's scheme ({@code etcd://},
     * {@code redis://}, ...) and configured by the engine's {@code metadata.<scheme>.*} options, for a transport whose
     * protocol keeps keys of its own in such a store (Mooncake's {@code mooncake/ram/<name>}). The transport owns the
     * store and closes it; it must never write under the engine's own prefix ({@code tent4j/}).
     *
     * @param optionKey the transport option the URI came from, named in errors
     * @param uri       the store's URI
     * @return an open store the transport owns and closes
     * @throws ConfigException naming {@code optionKey} when no plugin serves the scheme;
     *                                        METADATA_UNAVAILABLE as the plugin's open fails
     */
    default MetadataStore openMetadataStore(String optionKey, URI uri) {
        throw new ConfigException(optionKey, "this engine opens no metadata stores for transports");
    }

    // remote file segments (issue 12): begin
    /**
     * The engine's registered files, for a network transport that serves peers' requests for them (the target reads
     * or writes the file on the peer's behalf). {@link LocalFiles#NONE} where the engine offers none.
     *
     * @return the live view of registered files
     */

    default LocalFiles localFiles() {
        return LocalFiles.NONE;
    }
    // remote file segments (issue 12): end
}
