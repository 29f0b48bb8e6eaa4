package org.tent4j.runtime;

import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.Batch;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.Notification;
import org.tent4j.api.Permission;
import org.tent4j.api.PreparedTransfer;
import org.tent4j.api.RegisteredFile;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.SegmentInfo;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransferPlan;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferStatus;
import org.tent4j.api.TransportInfo;
import org.tent4j.runtime.config.CoreKey;
import org.tent4j.runtime.config.ResolvedConfig;
import org.tent4j.runtime.control.ControlPlaneNode;
import org.tent4j.runtime.launch.AwaitSpin;
import org.tent4j.runtime.launch.BatchImpl;
import org.tent4j.runtime.launch.PreparedTransferImpl;
import org.tent4j.runtime.launch.RequestResolver;
import org.tent4j.runtime.launch.TaskLauncher;
import org.tent4j.runtime.memory.BufferRegistrar;
import org.tent4j.runtime.memory.DescriptorPublisher;
import org.tent4j.runtime.memory.FileSegments;
import org.tent4j.runtime.memory.Registrations;
import org.tent4j.runtime.metadata.DescriptorCodec;
import org.tent4j.runtime.metadata.ForeignSegments;
import org.tent4j.runtime.metadata.MetadataStores;
import org.tent4j.runtime.metadata.PeerToPeerDirectory;
import org.tent4j.runtime.metadata.SegmentDirectory;
import org.tent4j.runtime.metadata.StoreDirectory;
import org.tent4j.runtime.metrics.EngineMetrics;
import org.tent4j.runtime.peers.SegmentTable;
import org.tent4j.runtime.plugins.DevicePlatforms;
import org.tent4j.runtime.plugins.PluginLoader;
import org.tent4j.runtime.plugins.TransportRegistry;
import org.tent4j.runtime.schedule.PathGroup;
import org.tent4j.runtime.schedule.SlicePool;
import org.tent4j.runtime.schedule.SliceRouter;
import org.tent4j.runtime.schedule.Task;
import org.tent4j.runtime.select.Policy;
import org.tent4j.runtime.select.TransportSelector;
import org.tent4j.spi.ControlPlane;
import org.tent4j.spi.LocalFiles;
import org.tent4j.spi.LocalMemory;
import org.tent4j.spi.MetadataStore;
import org.tent4j.spi.MetadataStoreProvider;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.SecuritySettings;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.TimeSource;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.TransportMetrics;
import org.tent4j.spi.platform.DevicePlatform;

/**
 * The engine as the application sees it. It only wires parts together and delegates; a request meets them in this
 * order: {@link RequestResolver} (validation) → {@link TransportSelector} (decision and trace) → {@link TaskLauncher}
 * (slicing) → {@link SliceRouter} (the path group of each peer and transport, failover, the sweep) → {@link PathGroup}
 * (connect, queue, path choice, path health) → the transport → {@link Task}/{@link BatchImpl}. Around them: {@link TransportRegistry}
 * (plugins), {@link SegmentTable} (open peers), {@link DescriptorPublisher}, {@link BufferRegistrar},
 * {@link Notifications}. Parts never call back into this class.
 */
final class TransferEngineImpl implements TransferEngine {
    private static final Logger log = LoggerFactory.getLogger(TransferEngineImpl.class);
    private static final String PROBE = "engine.probe";

    private final EngineState state;
    private final ResolvedConfig config;
    private final ExecutorService workers;
    private final ScheduledExecutorService scheduler;
    /**
     * Connects to peers. Its own threads, not the workers: a connect may wait on a handshake that a worker of this
     * very engine must answer (a loopback connection), which must not deadlock with few workers.
     */
    private final ExecutorService connector;
    private final ControlPlaneNode control;
    private final FileSegments files = new FileSegments(); // file segments (issue 12)
    private final MetadataStores stores;
    private final SegmentDirectory directory;
    private final MetadataExchange exchange; // metadata blobs and namespaces (issue 13)
    private final EngineMetrics metrics;
    private final DevicePlatforms platforms = new DevicePlatforms();
    private final TransportRegistry transports;
    private final DescriptorPublisher publisher;
    private final SegmentTable segments;
    private final BufferRegistrar buffers;
    private final Registrations registrations;
    private final TransportSelector selector;
    private final SliceRouter router;
    private final Notifications notifications;
    private final TaskLauncher launcher;
    private final int maxBatch;

    TransferEngineImpl(EngineConfig engineConfig) {
        this(engineConfig, TimeSource.SYSTEM);
    }

    /** @param clock the time every part reads; tests pass a virtual one */
    TransferEngineImpl(EngineConfig engineConfig, TimeSource clock) {
        var providers = TransportRegistry.discover();
        List<MetadataStoreProvider> storeProviders = PluginLoader.load(PluginLoader.METADATA_STORES);
        Map<String, List<OptionSpec>> pluginOptions = TransportRegistry.options(providers);
        for (MetadataStoreProvider p : storeProviders) {
            for (String scheme : p.schemes()) {
                pluginOptions.put("metadata." + scheme + ".", p.options());
            }
        }
        this.config = ResolvedConfig.resolve(engineConfig, pluginOptions);
        EngineSettings settings = EngineSettings.of(config.core());
        this.maxBatch = settings.maxBatch();
        String machineId = settings.machineId().isEmpty() ? HostIdentity.machineId() : settings.machineId();
        String host = settings.host().isEmpty() ? HostIdentity.defaultHost() : settings.host();

        this.workers = Executors.newFixedThreadPool(settings.workers(), Thread.ofPlatform().daemon().name("tent4j-worker-", 0).factory());
        this.scheduler = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().daemon().name("tent4j-timer").factory());
        this.connector = Executors.newCachedThreadPool(Thread.ofPlatform().daemon().name("tent4j-connect-", 0).factory());
        List<AutoCloseable> built = new ArrayList<>();
        try {
            this.control = new ControlPlaneNode(host, config.core().getInt(EngineConfig.CONTROL_PORT), workers,
                    ControlPlaneNode.Settings.from(config.core()));
            built.add(control);
            String name = config.core().getString(EngineConfig.SEGMENT_NAME);
            String segmentName = name.isEmpty() ? host + ":" + control.port() : name;
            this.state = new EngineState(segmentName);
            control.localSegment(segmentName);
            this.stores = new MetadataStores(storeProviders, config::rawUnder);
            this.directory = openDirectory(config, control, stores, clock);
            built.add(directory);
            this.metrics = new EngineMetrics(segmentName);
            built.add(metrics);
            built.add(platforms);
            this.registrations = new Registrations();
            this.transports = new TransportRegistry(providers, config, (id, options) ->
                    new Context(segmentName, host, machineId, options, registrations, settings.transferTimeout(), clock, id));
            built.add(transports);
            metrics.transports(transports.ids());
            countControlPlaneRefusals(metrics, control);
            metrics.gauge("tent4j.buffer.pins", "slices in transports now, each pinning its local buffer", registrations,
                    Registrations::pins);
            metrics.gauge("tent4j.control.connections", "control-plane connections open now", control,
                    ControlPlaneNode::inboundConnections, "direction", "inbound");
            metrics.gauge("tent4j.control.connections", "control-plane connections open now", control,
                    ControlPlaneNode::outboundConnections, "direction", "outbound");
            int metricsPort = config.core().getInt(EngineConfig.METRICS_PORT);
            if (metricsPort >= 0) {
                // where the control plane binds: an engine kept on loopback keeps its metrics there too
                int bound = metrics.serve(host, metricsPort);
                log.info("metrics of segment '{}' at http://{}:{}/metrics", segmentName, host, bound);
            }
            this.publisher = new DescriptorPublisher(new DescriptorPublisher.Identity(segmentName, machineId, host, control.port(),
                    ProcessHandle.current().pid(), HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextLong())),
                    transports, registrations, files, directory);
            this.selector = new TransportSelector(transports, Policy.parse(config.core().getString(Policy.KEY),
                    providers.stream().map(p -> p.id()).collect(java.util.stream.Collectors.toSet()), transports::indexOf),
                    settings.fallback(), metrics);
            this.router = new SliceRouter(state, selector, workers, connector, metrics, clock, settings.pathLimits(),
                    settings.maxAttempts(), transports.size());
            this.segments = new SegmentTable(state, new ForeignSegments(directory, transports::resolveSegment),
                    publisher.localSegment(), router);
            this.buffers = new BufferRegistrar(state, registrations, transports, publisher, settings.transferTimeout().toNanos());
            this.notifications = new Notifications(segmentName, control, config.core());
            notifications.countDrops(metrics);
            SlicePool slicePool = new SlicePool(4096, clock, SlicePool.QUARANTINE_NANOS);
            metrics.staleSettlements(slicePool.staleSettlements());
            this.launcher = new TaskLauncher(state, new RequestResolver(state, registrations, segments, machineId), selector, router,
                    slicePool, notifications, metrics, workers, clock, settings.sliceSize(), settings.transferTimeout().toNanos(),
                    new AwaitSpin(settings.awaitSpin().toNanos(), TimeSource.SYSTEM), buffers, platforms);
            control.serve(PeerToPeerDirectory.SERVICE, (caller, req) -> DescriptorCodec.encode(publisher.current()));
            control.serve(PROBE, (caller, req) -> new byte[0]);
            this.exchange = new MetadataExchange(segmentName, control, directory, publisher::current); // issue 13
            publisher.start(scheduler, directory instanceof StoreDirectory ? Math.max(100, settings.metadataTtl().toMillis() / 3) : 0);
            router.startSweeping(scheduler);
        } catch (RuntimeException e) {
            for (int i = built.size() - 1; i >= 0; i--) {
                try {
                    built.get(i).close();
                } catch (Exception suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            workers.shutdownNow();
            scheduler.shutdownNow();
            connector.shutdownNow();
            throw e;
        }
        log.info("engine '{}' up: transports {}, metadata {}", state.segmentName(), transports.ids(),
                config.core().getString(EngineConfig.METADATA_URI));
    }

    private static SegmentDirectory openDirectory(ResolvedConfig config, ControlPlaneNode control, MetadataStores stores,
                                                  TimeSource clock) {
        List<String> list = List.copyOf(TransportRegistry.parseList(config.core().getString(EngineConfig.METADATA_URI)));
        if (list.equals(List.of("p2p"))) {
            return new PeerToPeerDirectory(control, Duration.ofSeconds(5));
        }
        List<StoreDirectory.Target> targets = new ArrayList<>();
        for (String u : list) {
            targets.add(stores.target(EngineConfig.METADATA_URI, u));
        }
        return new StoreDirectory(targets, config.core().getString(CoreKey.METADATA_CLUSTER), config.core().getDuration(CoreKey.METADATA_TTL),
                clock);
    }

    /** The context each transport is created with. */
    private final class Context implements TransportContext {
        private final String segmentName;
        private final String host;
        private final String machineId;
        private final OptionValues options;
        private final LocalMemory memory;
        private final Duration transferTimeout;
        private final TimeSource clock;
        private final String transportId;

        Context(String segmentName, String host, String machineId, OptionValues options, LocalMemory memory,
                Duration transferTimeout, TimeSource clock, String transportId) {
            this.segmentName = segmentName;
            this.host = host;
            this.machineId = machineId;
            this.options = options;
            this.memory = memory;
            this.transferTimeout = transferTimeout;
            this.clock = clock;
            this.transportId = transportId;
        }

        @Override public String segmentName() { return segmentName; }
        @Override public String host() { return host; }
        @Override public String machineId() { return machineId; }
        @Override public OptionValues options() { return options; }
        @Override public LocalMemory localMemory() { return memory; }
        @Override public ExecutorService workers() { return workers; }
        @Override public ScheduledExecutorService scheduler() { return scheduler; }
        @Override public ControlPlane controlPlane() { return control; }
        @Override public Duration transferTimeout() { return transferTimeout; }
        @Override public SecuritySettings security() { return control.security(); }
        @Override public TimeSource clock() { return clock; }
        @Override public TransportMetrics metrics() { return metrics.forTransport(transportId); }
        @Override public List<DevicePlatform> devicePlatforms() { return platforms.get(); }
        @Override public LocalFiles localFiles() { return files.access(); } // remote file segments (issue 12)
        @Override public MetadataStore openMetadataStore(String optionKey, URI uri) { return stores.open(optionKey, uri); }
    }

    /** Every refusal of the control plane is a log line and, here, a metric (docs/SECURITY.md lists them). */
    private static void countControlPlaneRefusals(EngineMetrics metrics, ControlPlaneNode control) {
        metrics.count("tent4j.control.auth.failures", "connections that failed the token handshake or TLS", control,
                ControlPlaneNode::authFailures);
        metrics.count("tent4j.control.stray.replies", "replies that came on another connection than their call's (ignored)",
                control, ControlPlaneNode::strayReplies);
        metrics.count("tent4j.control.bad.frames", "malformed or oversized frames (their connection closed)", control,
                ControlPlaneNode::badFrames);
        metrics.count("tent4j.control.refused", "refused by a limit or a binding", control, ControlPlaneNode::refusedConnections,
                "what", "connection");
        metrics.count("tent4j.control.refused", "refused by a limit or a binding", control, ControlPlaneNode::refusedRequests,
                "what", "request");
        metrics.count("tent4j.control.refused", "refused by a limit or a binding", control, ControlPlaneNode::refusedCallers,
                "what", "caller");
        metrics.count("tent4j.control.request.budget.refusals", "requests refused because control.max_request_bytes was "
                + "held (also counted in tent4j.control.refused{what=request})", control, ControlPlaneNode::requestBudgetRefusals);
        metrics.gauge("tent4j.control.request.bytes", "bytes of control-plane requests waiting for or on a worker", control,
                ControlPlaneNode::requestBytesInFlight);
    }

    // ---------------------------------------------------------------- memory

    @Override
    public String segmentName() {
        return state.segmentName();
    }

    @Override
    public SegmentHandle localSegment() {
        return segments.local();
    }

    @Override
    public RegisteredMemory register(MemorySegment memory, Location location, Permission permission) {
        return buffers.register(memory, location, permission, Map.of(), null);
    }

    @Override
    public RegisteredMemory allocate(long size, Location location, Permission permission) {
        return buffers.allocate(size, location, permission);
    }

    @Override
    public void unregister(RegisteredMemory memory) {
        buffers.unregister(memory);
    }

    @Override
    public Optional<RegisteredMemory> findRegistration(MemorySegment range) {
        // a heap segment's address is an offset into its array, never registered memory
        return range.isNative() ? Optional.ofNullable(registrations.find(range.address(), range.byteSize())) : Optional.empty();
    }

    // file segments (issue 12): begin
    @Override
    public RegisteredFile registerFile(Path path, long size, Permission permission) {
        state.ensureOpen();
        RegisteredFile f = files.register(path, size, permission, transports.slots());
        publisher.republish();
        return f;
    }

    @Override
    public void unregisterFile(RegisteredFile file) {
        files.unregister(file, state.segmentName(), transports.slots());
        if (!state.isClosed()) {
            publisher.republish();
        }
    }
    // file segments (issue 12): end

    // ---------------------------------------------------------------- segments

    @Override
    public SegmentHandle openSegment(String name) {
        return segments.open(name);
    }

    @Override
    public void closeSegment(SegmentHandle segment) {
        segments.close(segment);
    }

    @Override
    public SegmentInfo segmentInfo(SegmentHandle segment) {
        return segments.own(segment).descriptor().info();
    }

    // ---------------------------------------------------------------- metadata blobs (delegating to MetadataExchange)

    @Override
    public byte[] segmentBlob() {
        state.ensureOpen();
        return MetadataExchange.encode(publisher.current());
    }

    @Override
    public SegmentHandle openSegment(byte[] blob) {
        return segments.open(MetadataExchange.decode(blob));
    }

    @Override
    public void offerBlob(String label, java.util.function.Supplier<byte[]> blob) {
        state.ensureOpen();
        exchange.offer(label, blob);
    }

    @Override
    public String controlEndpoint() {
        SegmentDescriptor own = publisher.current();
        return own.host() + ":" + own.controlPort();
    }

    @Override
    public byte[] fetchBlob(String host, int port, String label, Duration timeout) {
        state.ensureOpen();
        return exchange.fetch(host, port, label, timeout);
    }

    @Override
    public org.tent4j.api.MetadataNamespace metadataNamespace(String namespace) {
        state.ensureOpen();
        return exchange.namespace(namespace);
    }


    // ---------------------------------------------------------------- transfers

    @Override
    public Batch allocateBatch(int capacity) {
        state.ensureOpen();
        if (capacity <= 0 || capacity > maxBatch) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "batch capacity must be in [1, " + maxBatch + "], got " + capacity);
        }
        return new BatchImpl(launcher, capacity);
    }

    @Override
    public PreparedTransfer prepare(List<TransferRequest> requests) {
        state.ensureOpen();
        if (requests.size() > maxBatch) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "a prepared transfer holds at most " + maxBatch
                    + " requests (batch.max_capacity), got " + requests.size());
        }
        return new PreparedTransferImpl(launcher, state, requests);
    }

    @Override
    public CompletableFuture<TransferStatus> submit(TransferRequest request) {
        return launcher.submit(request);
    }

    @Override
    public TransferPlan explain(TransferRequest request) {
        return launcher.explain(request);
    }

    // ---------------------------------------------------------------- notifications

    @Override
    public CompletableFuture<Void> sendNotification(SegmentHandle target, String message) {
        state.ensureOpen();
        return notifications.send(segments.own(target), message);
    }

    @Override
    public List<Notification> drainNotifications() {
        return notifications.drain();
    }

    @Override
    public Notification awaitNotification(Duration timeout) throws InterruptedException {
        return notifications.await(timeout);
    }

    @Override
    public void onNotification(Consumer<Notification> listener) {
        notifications.listen(listener);
    }

    @Override
    public List<TransportInfo> transports() {
        return transports.infos();
    }

    /** The metrics registry, for embedding hosts and tests. */
    EngineMetrics metrics() {
        return metrics;
    }

    /** Where slices go, for tests that look at path groups. */
    SliceRouter router() {
        return router;
    }

    // ---------------------------------------------------------------- close

    /** Closes in the reverse order of the data flow: stop taking work, withdraw, drop peers, stop transports, free. */
    @Override
    public void close() {
        if (!state.close()) {
            return;
        }
        router.stopSweeping();
        publisher.close();
        directory.close();
        segments.close();
        long notClosed = transports.closeAll();
        files.access().closeAll(); // remote file segments (issue 12)
        control.close();
        buffers.releaseAll(notClosed);
        platforms.close();
        metrics.close();
        workers.shutdown();
        scheduler.shutdownNow();
        connector.shutdown();
        log.info("engine '{}' closed", state.segmentName());
    }

    @Override
    public String toString() {
        return "TransferEngine[" + state.segmentName() + "]";
    }
}
