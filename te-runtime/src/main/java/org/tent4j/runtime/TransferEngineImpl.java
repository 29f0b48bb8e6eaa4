package org.tent4j.runtime;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.Batch;
import org.tent4j.api.ConfigException;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Notification;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.SegmentInfo;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransferPlan;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;
import org.tent4j.api.TransportInfo;
import org.tent4j.api.TransportMode;
import org.tent4j.runtime.config.CoreKey;
import org.tent4j.runtime.config.ResolvedConfig;
import org.tent4j.runtime.control.ControlPlaneNode;
import org.tent4j.runtime.metadata.DescriptorCodec;
import org.tent4j.runtime.metadata.PeerToPeerDirectory;
import org.tent4j.runtime.metadata.SegmentDirectory;
import org.tent4j.runtime.metadata.StoreDirectory;
import org.tent4j.runtime.metrics.EngineMetrics;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.ControlPlane;
import org.tent4j.spi.LocalMemory;
import org.tent4j.spi.MemoryAllocator;
import org.tent4j.spi.MetadataStoreProvider;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SecuritySettings;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.TransportProvider;

/**
 * The engine: validates each request, selects a transport, cuts the request into slices and posts them; the
 * transports report completions that fold into task and batch status.
 */
final class TransferEngineImpl implements TransferEngine {
    private static final Logger log = LoggerFactory.getLogger(TransferEngineImpl.class);
    private static final String NOTIFY = "engine.notify";
    private static final String PROBE = "engine.probe";

    private final ResolvedConfig config;
    private final String machineId;
    private final String host;
    private final ExecutorService workers;
    private final ScheduledExecutorService scheduler;
    private final ControlPlaneNode control;
    private final String segmentName;
    private final TransportSlot[] transports;
    /** Ids of {@link #transports}, in slot order (published in every descriptor). */
    private final List<String> transportIds;
    private final List<TransportInfo> transportInfos;
    private final int[] preference;
    private final boolean explicitPreference;
    private final boolean fallback;
    private final long sliceSize;
    private final Duration transferTimeout;
    private final int maxBatch;
    private final Registrations registrations = new Registrations();
    private final AtomicInteger bufferIds = new AtomicInteger();
    private final SegmentDirectory directory;
    private final Map<String, RemoteSegment> segments = new ConcurrentHashMap<>();
    private final AtomicInteger segmentIds = new AtomicInteger();
    private final RemoteSegment localSegment;
    private final SlicePool slicePool = new SlicePool(8192);
    private final EngineMetrics metrics;
    /** Bounded: peers decide how many notifications arrive, the application how fast they are taken. */
    private final LinkedBlockingQueue<Notification> notifications;
    private final List<Consumer<Notification>> listeners = new CopyOnWriteArrayList<>();
    private final Set<String> warnedFallbacks = ConcurrentHashMap.newKeySet();
    private final AtomicLong version = new AtomicLong();
    private final ScheduledFuture<?> keepAlive;
    private final ScheduledFuture<?> sweeper;
    private final int maxAttempts;
    private final int maxInflight;
    private final long maxInflightBytes;
    private final long cooldownNanos;
    private final long maxCooldownNanos;
    private final long agingNanos;
    private final Map<String, long[]> failoverLog = new ConcurrentHashMap<>();
    private final List<Policy> policies;
    private final Map<String, Policy> policiesByName;
    private volatile SegmentDescriptor descriptor;
    private volatile boolean closed;

    TransferEngineImpl(EngineConfig engineConfig) {
        List<TransportProvider> providers = new ArrayList<>();
        ServiceLoader.load(TransportProvider.class).forEach(providers::add);
        providers.sort(Comparator.comparingInt((TransportProvider p) -> p.capabilities().rank()).thenComparing(TransportProvider::id));
        List<MetadataStoreProvider> storeProviders = new ArrayList<>();
        ServiceLoader.load(MetadataStoreProvider.class).forEach(storeProviders::add);
        Map<String, List<OptionSpec>> pluginOptions = new LinkedHashMap<>();
        for (TransportProvider p : providers) {
            pluginOptions.put("transports." + p.id() + ".", p.options());
        }
        for (MetadataStoreProvider p : storeProviders) {
            for (String scheme : p.schemes()) {
                pluginOptions.put("metadata." + scheme + ".", p.options());
            }
        }
        this.config = ResolvedConfig.resolve(engineConfig, pluginOptions);
        OptionValues core = config.core();
        int nWorkers = core.getInt(EngineConfig.WORKERS);
        if (nWorkers < 0) {
            throw new ConfigException(EngineConfig.WORKERS, "must be >= 0, got " + nWorkers);
        }
        nWorkers = nWorkers == 0 ? Runtime.getRuntime().availableProcessors() : nWorkers;
        this.sliceSize = core.getSize(EngineConfig.SLICE_SIZE);
        if (sliceSize < 4096) {
            throw new ConfigException(EngineConfig.SLICE_SIZE, "must be at least 4k, got " + sliceSize);
        }
        this.transferTimeout = core.getDuration(EngineConfig.TRANSFER_TIMEOUT);
        if (transferTimeout.isNegative() || transferTimeout.isZero()) {
            throw new ConfigException(EngineConfig.TRANSFER_TIMEOUT, "must be positive");
        }
        this.maxBatch = core.getInt(CoreKey.BATCH_MAX_CAPACITY);
        int maxNotifications = core.getInt(CoreKey.NOTIFICATIONS_MAX_QUEUED);
        if (maxNotifications < 1) {
            throw new ConfigException(CoreKey.NOTIFICATIONS_MAX_QUEUED, "must be >= 1, got " + maxNotifications);
        }
        this.notifications = new LinkedBlockingQueue<>(maxNotifications);
        this.maxAttempts = core.getInt(CoreKey.FAILOVER_MAX_ATTEMPTS);
        this.maxInflight = core.getInt(CoreKey.PATHS_MAX_INFLIGHT);
        if (maxInflight < 1) {
            throw new ConfigException(CoreKey.PATHS_MAX_INFLIGHT, "must be >= 1, got " + maxInflight);
        }
        this.maxInflightBytes = core.getSize(CoreKey.PATHS_MAX_INFLIGHT_BYTES);
        this.cooldownNanos = core.getDuration(CoreKey.PATHS_COOLDOWN).toNanos();
        this.maxCooldownNanos = Math.max(cooldownNanos, core.getDuration(CoreKey.PATHS_MAX_COOLDOWN).toNanos());
        this.agingNanos = core.getDuration(CoreKey.QOS_AGING).toNanos();
        this.fallback = core.getBoolean(EngineConfig.TRANSPORTS_FALLBACK);
        String configuredMachine = core.getString(CoreKey.MACHINE_ID);
        this.machineId = configuredMachine.isEmpty() ? HostIdentity.machineId() : configuredMachine;
        String configuredHost = core.getString(EngineConfig.CONTROL_HOST);
        this.host = configuredHost.isEmpty() ? HostIdentity.defaultHost() : configuredHost;

        this.workers = Executors.newFixedThreadPool(nWorkers, Thread.ofPlatform().daemon().name("tent4j-worker-", 0).factory());
        this.scheduler = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().daemon().name("tent4j-timer").factory());
        List<AutoCloseable> built = new ArrayList<>();
        try {
            this.control = new ControlPlaneNode(host, core.getInt(EngineConfig.CONTROL_PORT), workers,
                    ControlPlaneNode.Settings.from(core));
            built.add(control);
            String name = core.getString(EngineConfig.SEGMENT_NAME);
            this.segmentName = name.isEmpty() ? host + ":" + control.port() : name;
            control.localSegment(segmentName);
            this.directory = openDirectory(core.getString(EngineConfig.METADATA_URI), storeProviders);
            built.add(directory);

            Set<String> enabled = parseList(core.getString(EngineConfig.TRANSPORTS_ENABLED));
            for (String id : enabled) {
                if (!id.equals("*") && providers.stream().noneMatch(p -> p.id().equals(id))) {
                    throw new ConfigException(EngineConfig.TRANSPORTS_ENABLED, "no transport '" + id + "' on the class path (found: "
                            + providers.stream().map(TransportProvider::id).toList() + ")");
                }
            }
            List<TransportSlot> slots = new ArrayList<>();
            List<TransportInfo> infos = new ArrayList<>();
            for (TransportProvider p : providers) {
                boolean wanted = enabled.contains("*") || enabled.contains(p.id());
                OptionValues options = config.plugin("transports." + p.id() + ".", p.options());
                var availability = p.availability(options);
                if (!availability.isAvailable()) {
                    infos.add(new TransportInfo(p.id(), false, availability.reason(), false));
                    if (wanted) {
                        log.info("transport '{}' skipped: unavailable: {}", p.id(), availability.reason());
                    }
                    continue;
                }
                if (!wanted) {
                    infos.add(new TransportInfo(p.id(), true, null, false));
                    continue;
                }
                if (slots.size() == 64) {
                    throw new ConfigException(EngineConfig.TRANSPORTS_ENABLED, "at most 64 transports can run in one engine");
                }
                try {
                    Transport t = p.create(new Context(options));
                    slots.add(new TransportSlot(slots.size(), p.id(), p, t.capabilities().orElse(p.capabilities()), t));
                    built.add(t);
                    infos.add(new TransportInfo(p.id(), true, null, true));
                } catch (ConfigException e) {
                    throw e;
                } catch (RuntimeException e) {
                    log.warn("transport '{}' skipped: it failed to start: {}", p.id(), e.getMessage());
                    infos.add(new TransportInfo(p.id(), false, "failed to start: " + e.getMessage(), false));
                }
            }
            this.transports = slots.toArray(new TransportSlot[0]);
            this.transportIds = slots.stream().map(TransportSlot::id).toList();
            this.transportInfos = List.copyOf(infos);
            List<String> pref = new ArrayList<>(parseList(core.getString(EngineConfig.TRANSPORTS_PREFERENCE)));
            pref.remove("*");
            for (String id : pref) {
                if (providers.stream().noneMatch(p -> p.id().equals(id))) {
                    throw new ConfigException(EngineConfig.TRANSPORTS_PREFERENCE, "no transport '" + id + "' on the class path");
                }
            }
            this.explicitPreference = !pref.isEmpty();
            List<Integer> order = new ArrayList<>();
            for (String id : pref) {
                int i = indexOf(id);
                if (i >= 0) {
                    order.add(i);
                }
            }
            for (TransportSlot s : transports) {
                if (!order.contains(s.index())) {
                    order.add(s.index());
                }
            }
            this.preference = order.stream().mapToInt(Integer::intValue).toArray();
            this.policies = Policy.parse(core.getString(Policy.KEY),
                    providers.stream().map(TransportProvider::id).collect(java.util.stream.Collectors.toSet()), this::indexOf);
            this.policiesByName = Policy.byName(policies);

            this.metrics = new EngineMetrics(segmentName, transportIds);
            built.add(metrics);
            int metricsPort = core.getInt(EngineConfig.METRICS_PORT);
            if (metricsPort >= 0) {
                int bound = metrics.serve("0.0.0.0", metricsPort);
                log.info("metrics of segment '{}' at http://{}:{}/metrics", segmentName, host, bound);
            }
            control.serve(PeerToPeerDirectory.SERVICE, (caller, req) -> DescriptorCodec.encode(descriptor));
            control.serve(NOTIFY, Notification.MAX_MESSAGE_BYTES, (caller, req) -> {
                deliver(new Notification(caller, new String(req, StandardCharsets.UTF_8)));
                return new byte[0];
            });
            control.serve(PROBE, (caller, req) -> new byte[0]);
            this.descriptor = buildDescriptor();
            this.localSegment = new RemoteSegment(0, segmentName, true, descriptor, transports.length);
            directory.publish(descriptor);
            if (directory instanceof StoreDirectory) {
                long period = Math.max(100, core.getDuration(CoreKey.METADATA_TTL).toMillis() / 3);
                keepAlive = scheduler.scheduleAtFixedRate(this::refreshPublication, period, period, TimeUnit.MILLISECONDS);
            } else {
                keepAlive = null;
            }
            sweeper = scheduler.scheduleWithFixedDelay(this::sweep, 50, 50, TimeUnit.MILLISECONDS);
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
            throw e;
        }
        log.info("engine '{}' up: transports {}, metadata {}", segmentName,
                transportIds, core.getString(EngineConfig.METADATA_URI));
    }

    private SegmentDirectory openDirectory(String uris, List<MetadataStoreProvider> providers) {
        List<String> list = List.copyOf(parseList(uris));
        if (list.equals(List.of("p2p"))) {
            return new PeerToPeerDirectory(control, Duration.ofSeconds(5));
        }
        List<StoreDirectory.Target> targets = new ArrayList<>();
        for (String u : list) {
            URI uri;
            try {
                uri = URI.create(u);
            } catch (IllegalArgumentException e) {
                throw new ConfigException(EngineConfig.METADATA_URI, "malformed URI '" + u + "': " + e.getMessage());
            }
            String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase();
            MetadataStoreProvider p = providers.stream().filter(x -> x.schemes().contains(scheme)).findFirst()
                    .orElseThrow(() -> new ConfigException(EngineConfig.METADATA_URI, "no metadata store for '" + u
                            + "' on the class path (schemes found: p2p, " + providers.stream().flatMap(x -> x.schemes().stream()).toList() + ")"));
            p.availability().ensureAvailable("metadata store " + scheme);
            targets.add(new StoreDirectory.Target(uri, p, config.rawUnder("metadata." + scheme + ".")));
        }
        return new StoreDirectory(targets, config.core().getString(CoreKey.METADATA_CLUSTER), config.core().getDuration(CoreKey.METADATA_TTL));
    }

    private static Set<String> parseList(String s) {
        Set<String> out = new java.util.LinkedHashSet<>();
        for (String p : s.split(",")) {
            if (!p.isBlank()) {
                out.add(p.strip());
            }
        }
        return out;
    }

    private int indexOf(String transportId) {
        for (TransportSlot s : transports) {
            if (s.id().equals(transportId)) {
                return s.index();
            }
        }
        return -1;
    }

    /** The context each transport is created with. */
    private final class Context implements TransportContext {
        private final OptionValues options;

        Context(OptionValues options) {
            this.options = options;
        }

        @Override public String segmentName() { return segmentName; }
        @Override public String host() { return host; }
        @Override public String machineId() { return machineId; }
        @Override public OptionValues options() { return options; }
        @Override public LocalMemory localMemory() { return registrations; }
        @Override public ExecutorService workers() { return workers; }
        @Override public ScheduledExecutorService scheduler() { return scheduler; }
        @Override public ControlPlane controlPlane() { return control; }
        @Override public Duration transferTimeout() { return transferTimeout; }
        @Override public SecuritySettings security() { return control.security(); }
    }

    // ---------------------------------------------------------------- descriptor

    private SegmentDescriptor buildDescriptor() {
        List<BufferDescriptor> buffers = new ArrayList<>();
        for (RegisteredBuffer b : registrations.all()) {
            if (b.permission() == Permission.LOCAL_ONLY) {
                continue;
            }
            List<String> ts = new ArrayList<>();
            for (TransportSlot s : transports) {
                if (b.registeredWith(s.index())) {
                    ts.add(s.id());
                }
            }
            buffers.add(new BufferDescriptor(b.address(), b.length(), b.location(), b.permission(), ts, b.transportAttributes));
        }
        Map<String, Map<String, String>> attrs = new LinkedHashMap<>();
        for (TransportSlot s : transports) {
            attrs.put(s.id(), s.transport().segmentAttributes());
        }
        return new SegmentDescriptor(segmentName, machineId, host, control.port(),
                transportIds, attrs, buffers, version.incrementAndGet());
    }

    private synchronized void republish() {
        descriptor = buildDescriptor();
        localSegment.descriptor = descriptor;
        try {
            directory.publish(descriptor);
        } catch (TransferException e) {
            // The keep-alive publishes again once a store answers; the registration itself stands.
            log.warn("descriptor of '{}' (version {}) not published yet: {}", segmentName, descriptor.version(), e.getMessage());
        }
    }

    private void refreshPublication() {
        try {
            directory.publish(descriptor);
        } catch (RuntimeException e) {
            log.debug("descriptor refresh of '{}' failed: {}", segmentName, e.getMessage());
        }
    }

    // ---------------------------------------------------------------- memory

    void ensureOpen() {
        if (closed) {
            throw new TransferException(ErrorCode.ENGINE_CLOSED, "engine '" + segmentName + "' is closed");
        }
    }

    @Override
    public String segmentName() {
        return segmentName;
    }

    @Override
    public SegmentHandle localSegment() {
        return localSegment;
    }

    @Override
    public RegisteredMemory register(MemorySegment memory, Location location, Permission permission) {
        return register(memory, location, permission, Map.of(), null);
    }

    private RegisteredMemory register(MemorySegment memory, Location location, Permission permission,
                                      Map<String, String> backing, Runnable release) {
        ensureOpen();
        if (!memory.isNative()) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "only off-heap (native) memory can be registered; got a heap segment of "
                    + memory.byteSize() + " bytes");
        }
        if (memory.byteSize() <= 0) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "cannot register an empty segment at 0x" + Long.toHexString(memory.address()));
        }
        RegisteredBuffer b = new RegisteredBuffer(bufferIds.incrementAndGet(), memory, location, permission, backing, release);
        registrations.add(b);
        Map<String, Map<String, String>> attrs = new LinkedHashMap<>();
        long mask = 0;
        for (TransportSlot s : transports) {
            try {
                Optional<Map<String, String>> a = s.transport().registerBuffer(b);
                if (a.isPresent()) {
                    mask |= 1L << s.index();
                    attrs.put(s.id(), a.get());
                }
            } catch (RuntimeException e) {
                log.warn("transport '{}' could not register {}: {}", s.id(), b, e.getMessage());
            }
        }
        b.transportMask = mask;
        b.transportAttributes = Map.copyOf(attrs);
        republish();
        return b;
    }

    @Override
    public RegisteredMemory allocate(long size, Location location, Permission permission) {
        ensureOpen();
        if (size <= 0) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "allocation size must be > 0, got " + size);
        }
        for (int idx : preference) {
            Optional<MemoryAllocator> a = transports[idx].transport().allocator();
            if (a.isPresent() && a.get().supports(location)) {
                MemoryAllocator.Allocation m = a.get().allocate(size, location);
                Location where = location.isAny() ? Location.CPU : location;
                try {
                    return register(m.segment(), where, permission, m.backing(), m.release());
                } catch (RuntimeException e) {
                    m.release().run();
                    throw e;
                }
            }
        }
        if (location.kindOrCpu() != MemoryKind.CPU) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "no transport or platform can allocate memory at " + location);
        }
        Arena arena = Arena.ofShared();
        MemorySegment seg = arena.allocate(size, 4096);
        try {
            return register(seg, location.isAny() ? Location.CPU : location, permission, Map.of(), arena::close);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    @Override
    public void unregister(RegisteredMemory memory) {
        if (!(memory instanceof RegisteredBuffer b) || !registrations.remove(b)) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "memory " + memory + " is not registered with engine '" + segmentName + "'");
        }
        for (TransportSlot s : transports) {
            if (b.registeredWith(s.index())) {
                try {
                    s.transport().unregisterBuffer(b);
                } catch (RuntimeException e) {
                    log.warn("transport '{}' failed to unregister {}: {}", s.id(), b, e.getMessage());
                }
            }
        }
        b.release();
        if (!closed) {
            republish();
        }
    }

    // ---------------------------------------------------------------- segments

    @Override
    public SegmentHandle openSegment(String name) {
        ensureOpen();
        if (name == null || name.isEmpty() || name.equals(segmentName)) {
            return localSegment;
        }
        RemoteSegment s = segments.get(name);
        if (s != null) {
            return s;
        }
        SegmentDescriptor d = directory.fetch(name);
        RemoteSegment fresh = new RemoteSegment(segmentIds.incrementAndGet(), name, false, d, transports.length);
        RemoteSegment prior = segments.putIfAbsent(name, fresh);
        if (prior != null) {
            return prior;
        }
        fresh.watch = directory.watch(name, changed -> descriptorChanged(fresh, changed));
        return fresh;
    }

    @Override
    public void closeSegment(SegmentHandle segment) {
        if (segment instanceof RemoteSegment s && !s.isLocal() && segments.remove(s.name(), s)) {
            s.closed = true;
            s.stopWatching();
            s.closeConnections();
        }
    }

    @Override
    public SegmentInfo segmentInfo(SegmentHandle segment) {
        RemoteSegment s = own(segment);
        return (s.isLocal() ? descriptor : s.descriptor).info();
    }

    private RemoteSegment own(SegmentHandle segment) {
        if (segment instanceof RemoteSegment s && (s == localSegment || segments.get(s.name()) == s)) {
            return s;
        }
        throw new TransferException(ErrorCode.UNKNOWN_SEGMENT, "segment " + (segment == null ? "null" : "'" + segment.name() + "'")
                + " is not open in engine '" + segmentName + "'");
    }

    /** A watched peer republished its descriptor, or it vanished ({@code null}: its engine closed or its lease expired). */
    private void descriptorChanged(RemoteSegment s, SegmentDescriptor d) {
        if (s.closed) {
            return;
        }
        if (d == null) {
            if (!s.gone) {
                log.info("segment '{}' was removed from the metadata store; its open connections stay until they fail", s.name());
            }
            s.gone = true;
            return;
        }
        s.gone = false;
        if (d.version() != s.descriptor.version() || !d.machineId().equals(s.descriptor.machineId())) {
            adopt(s, d);
        }
    }

    private SegmentDescriptor refresh(RemoteSegment s) {
        SegmentDescriptor d = directory.fetch(s.name());
        adopt(s, d);
        return d;
    }

    /** Caches a peer's new descriptor and tells its open connections. */
    private static void adopt(RemoteSegment s, SegmentDescriptor d) {
        s.descriptor = d;
        for (int i = 0; i < s.groups.length(); i++) {
            PathGroup g = s.groups.get(i);
            if (g != null) {
                g.connection.descriptorChanged(d);
            }
        }
    }

    // ---------------------------------------------------------------- transfers

    @Override
    public Batch allocateBatch(int capacity) {
        ensureOpen();
        if (capacity <= 0 || capacity > maxBatch) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "batch capacity must be in [1, " + maxBatch + "], got " + capacity);
        }
        return new BatchImpl(this, capacity);
    }

    @Override
    public CompletableFuture<TransferStatus> submit(TransferRequest request) {
        BatchImpl b = new BatchImpl(this, 1);
        b.submit(List.of(request));
        return b.completion(0);
    }

    @Override
    public TransferPlan explain(TransferRequest r) {
        Task t = new Task(null, -1, r.opcode(), r.length(), r.deadlineNanos() != 0, r.target().name());
        try {
            resolve(t, r);
        } catch (TransferException e) {
            return new TransferPlan(null, List.of(), null, null, 0, 0, e.getMessage());
        }
        List<TransferPlan.Candidate> trace = new ArrayList<>();
        TransportSlot chosen;
        try {
            chosen = select(t, 0, false, trace);
        } catch (TransferException e) {
            return new TransferPlan(t.policy == null ? null : t.policy.name(), trace, null, null, 0, 0, e.getMessage());
        }
        long step = Math.min(sliceSize, chosen.capabilities().maxSliceSize());
        TransferPlan plan = new TransferPlan(t.policy == null ? null : t.policy.name(), trace, chosen.id(),
                t.policy == null || t.policy.devices() == null ? null : List.copyOf(t.policy.devices()), step,
                (int) ((r.length() + step - 1) / step), null);
        log.debug("explain {} of {} bytes to '{}': {}", r.opcode(), r.length(), r.target().name(), plan);
        return plan;
    }

    /** Validates, selects, slices and posts one task; every failure ends the task rather than throwing. */
    void start(Task task, TransferRequest r) {
        try {
            post(task, r);
        } catch (TransferException e) {
            task.finish(new TransferStatus(e.code() == ErrorCode.PEER_UNREACHABLE || e.code() == ErrorCode.PEER_FAILED
                    || e.code() == ErrorCode.TRANSPORT_UNAVAILABLE || e.code() == ErrorCode.METADATA_UNAVAILABLE
                    ? TransferState.FAILED : TransferState.INVALID, 0, e.code(), "task " + task.id + ": " + e.getMessage()));
        } catch (RuntimeException e) {
            log.error("task {} failed unexpectedly", task.id, e);
            task.finish(new TransferStatus(TransferState.FAILED, 0, ErrorCode.INTERNAL, "task " + task.id + ": internal error: " + e));
        }
    }

    private static TransferException invalid(ErrorCode code, String message) {
        return new TransferException(code, message);
    }

    /** Checks a request against local registrations and the target's descriptor; fills in what the task needs. */
    private void resolve(Task task, TransferRequest r) {
        if (closed) {
            throw invalid(ErrorCode.ENGINE_CLOSED, "engine '" + segmentName + "' is closed");
        }
        long length = r.length();
        if (length <= 0) {
            throw invalid(ErrorCode.INVALID_ARGUMENT, "length must be > 0, got " + length);
        }
        MemorySegment localMem = r.local();
        if (length > localMem.byteSize()) {
            throw invalid(ErrorCode.OUT_OF_BOUNDS, "length " + length + " exceeds the local memory segment of " + localMem.byteSize() + " bytes");
        }
        RegisteredBuffer local = registrations.find(localMem.address(), length);
        if (local == null) {
            throw registrations.containing(localMem.address()) != null
                    ? invalid(ErrorCode.OUT_OF_BOUNDS, "local memory [0x" + Long.toHexString(localMem.address()) + ", +" + length
                    + ") runs past the end of its registered buffer " + registrations.containing(localMem.address()))
                    : invalid(ErrorCode.ADDRESS_NOT_REGISTERED, "local memory [0x" + Long.toHexString(localMem.address()) + ", +" + length
                    + ") is not registered with engine '" + segmentName + "'");
        }
        if (r.opcode() == Opcode.READ && (localMem.isReadOnly() || local.segment().isReadOnly())) {
            throw invalid(ErrorCode.PERMISSION_DENIED, "READ into local memory [0x" + Long.toHexString(localMem.address()) + ", +"
                    + length + ") denied: it is a read-only segment");
        }
        if (!(r.target() instanceof RemoteSegment seg) || (seg != localSegment && segments.get(seg.name()) != seg)) {
            throw invalid(ErrorCode.UNKNOWN_SEGMENT, "target segment " + (r.target() == null ? "null" : "'" + r.target().name() + "'")
                    + " is not open in engine '" + segmentName + "'");
        }
        if (seg.gone) {
            try {
                refresh(seg);
                seg.gone = false;
            } catch (TransferException e) {
                throw new TransferException(ErrorCode.PEER_FAILED, "segment '" + seg.name()
                        + "' is gone: its descriptor was removed from the metadata store (" + e.getMessage() + ")");
            }
        }
        SegmentDescriptor desc = seg.isLocal() ? descriptor : seg.descriptor;
        long target = r.targetOffset();
        BufferDescriptor remote = desc.findBuffer(target, length);
        if (remote == null && !seg.isLocal()) {
            // The peer may have registered the buffer after we cached its descriptor.
            desc = refresh(seg);
            remote = desc.findBuffer(target, length);
        }
        if (remote == null) {
            BufferDescriptor start = desc.findBuffer(target, 0);
            throw start != null
                    ? invalid(ErrorCode.OUT_OF_BOUNDS, "target [0x" + Long.toHexString(target) + ", +" + length + ") of segment '" + seg.name()
                    + "' runs past the end of its buffer [0x" + Long.toHexString(start.address()) + ", +" + start.length() + ")")
                    : invalid(ErrorCode.ADDRESS_NOT_REGISTERED, "target offset 0x" + Long.toHexString(target) + " (length " + length
                    + ") is in no registered buffer of segment '" + seg.name() + "'");
        }
        if (!remote.permission().allowsRemote(r.opcode())) {
            throw invalid(ErrorCode.PERMISSION_DENIED, r.opcode() + " of [0x" + Long.toHexString(target) + ", +" + length
                    + ") denied: buffer of segment '" + seg.name() + "' is " + remote.permission());
        }
        task.request = r;
        task.local = local;
        task.segment = seg;
        task.descriptor = desc;
        task.remote = remote;
    }

    private void post(Task task, TransferRequest r) {
        resolve(task, r);
        long length = r.length();
        MemorySegment localMem = r.local();
        RegisteredBuffer local = task.local;
        RemoteSegment seg = task.segment;
        SegmentDescriptor desc = task.descriptor;
        BufferDescriptor remote = task.remote;
        long target = r.targetOffset();
        long deadline = r.deadlineNanos() != 0 ? r.deadlineNanos() : System.nanoTime() + transferTimeout.toNanos();
        if (r.deadlineNanos() != 0 && deadline - System.nanoTime() <= 0) {
            task.finish(new TransferStatus(TransferState.TIMEOUT, 0, ErrorCode.TIMEOUT, "task " + task.id + ": deadline passed before submission"));
            return;
        }
        TransportSlot slot = select(task, 0, false);
        PathGroup group;
        for (;;) {
            try {
                group = group(seg, slot, desc);
                break;
            } catch (TransferException e) {
                // A transport that cannot even connect fails over like one that fails later.
                task.exclude(slot.index());
                TransportSlot next;
                try {
                    next = select(task, 0, true);
                } catch (TransferException none) {
                    throw new TransferException(e.code(), e.getMessage() + "; no other transport: " + none.getMessage(), e);
                }
                logFailover(seg, slot.id() + "/connect", next.id(), e.getMessage());
                metrics.failover(slot.id(), next.id());
                slot = next;
            }
        }
        task.transport = slot;
        long step = Math.min(sliceSize, slot.capabilities().maxSliceSize());
        int n = (int) ((length + step - 1) / step);
        task.expectSlices(n);
        long localOffset = localMem.address() - local.address();
        int priority = r.priority().ordinal();
        for (int i = 0; i < n; i++) {
            long off = i * step;
            RuntimeSlice s = slicePool.take();
            s.init(task, r.opcode(), local, localOffset + off, remote, target + off, Math.min(step, length - off), deadline, priority);
            s.group = group;
            group.enqueue(s, false);
        }
    }

    /**
     * Picks the transport for a task: hint first, then the preference order, skipping transports the task gave up on
     * and, on failover, those whose slices are smaller than the task's. Logs each fallback from a preference once.
     */
    private TransportSlot select(Task task, long sliceLength, boolean failover) {
        return select(task, sliceLength, failover, null);
    }

    /** The policy deciding a task's transport order: the one it names, else the first rule that matches, else none. */
    private Policy policyFor(Task task, MemoryKind lk, MemoryKind rk, boolean sameHost) {
        TransferRequest r = task.request;
        if (r.policy() != null) {
            Policy p = policiesByName.get(r.policy());
            if (p == null) {
                throw invalid(ErrorCode.INVALID_ARGUMENT, "no policy named '" + r.policy() + "' (configured: "
                        + policies.stream().map(Policy::name).toList() + ")");
            }
            return p;
        }
        for (Policy p : policies) {
            if (p.matches(r, lk, rk, sameHost)) {
                return p;
            }
        }
        return null;
    }

    private TransportSlot select(Task task, long sliceLength, boolean failover, List<TransferPlan.Candidate> trace) {
        TransferRequest r = task.request;
        RegisteredBuffer local = task.local;
        RemoteSegment seg = task.segment;
        SegmentDescriptor desc = task.descriptor;
        BufferDescriptor remote = task.remote;
        long excluded = task.excluded();
        MemoryKind lk = local.location().kindOrCpu();
        MemoryKind rk = remote.location().kindOrCpu();
        boolean sameHost = desc.machineId().equals(machineId);
        if (!failover) {
            task.policy = policyFor(task, lk, rk, sameHost);
        }
        int[] order = task.policy == null ? preference : task.policy.order();
        boolean ordered = explicitPreference || task.policy != null;
        String hint = r.transport();
        boolean require = hint != null && r.transportMode() == TransportMode.REQUIRE;
        String hintProblem = null;
        if (hint != null) {
            int h = indexOf(hint);
            hintProblem = h < 0 ? "this engine does not run it (running: " + transportIds + ")"
                    : (excluded & (1L << h)) != 0 ? "it failed for this task"
                    : unusable(transports[h], local, desc, remote, lk, rk, sameHost, sliceLength);
            if (trace != null) {
                trace.add(new TransferPlan.Candidate(hint, hintProblem == null, hintProblem));
            }
            if (hintProblem == null) {
                return transports[h];
            }
            if (require || !fallback) {
                throw invalid(ErrorCode.NO_TRANSPORT, "transport '" + hint + "' is " + (require ? "required" : "preferred and fallback is off")
                        + " but cannot carry " + r.opcode() + " to segment '" + seg.name() + "': " + hintProblem);
            }
        }
        StringBuilder why = null;
        TransportSlot chosen = null;
        for (int idx : order) {
            TransportSlot s = transports[idx];
            String problem = (excluded & (1L << idx)) != 0 ? "it failed for this task"
                    : unusable(s, local, desc, remote, lk, rk, sameHost, sliceLength);
            if (trace != null) {
                if (hint == null || !hint.equals(s.id())) {
                    trace.add(new TransferPlan.Candidate(s.id(), problem == null, problem));
                }
                if (problem == null && chosen == null) {
                    chosen = s;
                }
                continue;
            }
            if (problem == null) {
                if (failover) {
                    return s;
                }
                if (hint != null) {
                    warnFallback(seg, hint, s.id(), hintProblem);
                } else if (ordered && idx != order[0]) {
                    TransportSlot first = transports[order[0]];
                    String firstProblem = unusable(first, local, desc, remote, lk, rk, sameHost, sliceLength);
                    if (!fallback) {
                        throw invalid(ErrorCode.NO_TRANSPORT, "preferred transport '" + first.id() + "' cannot carry " + r.opcode()
                                + " to segment '" + seg.name() + "' and fallback is off: " + firstProblem);
                    }
                    warnFallback(seg, first.id(), s.id(), firstProblem);
                }
                return s;
            }
            why = (why == null ? new StringBuilder() : why.append("; ")).append(s.id()).append(": ").append(problem);
        }
        if (chosen != null) {
            return chosen;
        }
        throw invalid(ErrorCode.NO_TRANSPORT, "no transport can carry " + r.opcode() + " " + lk.prefix() + "->" + rk.prefix()
                + " to segment '" + seg.name() + "'" + (task.policy == null ? "" : " under policy '" + task.policy.name() + "'")
                + (why == null ? ": no transport is running" : " (" + why + ")"));
    }

    private String unusable(TransportSlot s, RegisteredBuffer local, SegmentDescriptor desc, BufferDescriptor remote,
                            MemoryKind lk, MemoryKind rk, boolean sameHost, long sliceLength) {
        if (!s.capabilities().supports(lk, rk)) {
            return "it cannot move " + lk.prefix() + "->" + rk.prefix();
        }
        if (s.capabilities().sameHostOnly() && !sameHost) {
            return "the peer is on another host";
        }
        if (!desc.transports().contains(s.id())) {
            return "the peer does not run it";
        }
        if (!remote.transports().contains(s.id())) {
            return "the target buffer is not registered with it";
        }
        if (!local.registeredWith(s.index())) {
            return "the local buffer is not registered with it";
        }
        if (sliceLength > s.capabilities().maxSliceSize()) {
            return "its slices are at most " + s.capabilities().maxSliceSize() + " bytes";
        }
        return null;
    }

    private void warnFallback(RemoteSegment seg, String from, String to, String why) {
        metrics.fallback(from, to);
        if (warnedFallbacks.add(seg.name() + '\0' + from + '\0' + to + '\0' + why)) {
            log.warn("transport fallback to segment '{}': '{}' instead of preferred '{}' because {}", seg.name(), to, from, why);
        }
    }

    /** The path group of (segment, transport), connecting (blocking) when there is none or its connection closed. */
    private PathGroup group(RemoteSegment seg, TransportSlot slot, SegmentDescriptor desc) {
        PathGroup g = seg.groups.get(slot.index());
        if (g != null && g.connection.isOpen()) {
            return g;
        }
        synchronized (seg) {
            g = seg.groups.get(slot.index());
            if (g != null && g.connection.isOpen()) {
                return g;
            }
            if (g != null) {
                g.connection.close();
            }
            PeerConnection c = slot.transport().connect(desc);
            PathGroup fresh = new PathGroup(this, seg, slot, c, maxInflight, maxInflightBytes, agingNanos, cooldownNanos, maxCooldownNanos);
            metrics.paths(seg.name(), slot.id(), List.of(fresh.paths));
            seg.groups.set(slot.index(), fresh);
            if (g != null) {
                // Slices still waiting on the dead connection move to the new one.
                for (RuntimeSlice s : g.takeAll()) {
                    s.group = fresh;
                    fresh.enqueue(s, true);
                }
            }
            return fresh;
        }
    }

    // ---------------------------------------------------------------- paths, health, failover

    void pathCompleted(PathGroup g, int path, long length, long postNanos) {
        if (g.paths[path].completed(length, postNanos, System.nanoTime())) {
            log.info("path {} to segment '{}' recovered: re-admitted after a success", g.describe(path), g.segment.name());
        }
    }

    void pathFailed(PathGroup g, int path, long length, ErrorCode code, String message) {
        if (path < 0) {
            return;
        }
        if (!code.retryable()) {
            // Bad input (a stale descriptor, a denied permission) says nothing about the path's health.
            g.paths[path].withdrawn(length);
            return;
        }
        long cooldown = g.paths[path].failed(length, System.nanoTime());
        if (cooldown > 0) {
            log.warn("path {} to segment '{}' paused for {} ms after {} failures in a row: {} ({})", g.describe(path),
                    g.segment.name(), cooldown / 1_000_000, PathState.PAUSE_AFTER, code, message);
        }
    }

    /**
     * A slice failed on {@code fromPath} of {@code from}: retry it on another path of the same connection while one is
     * eligible, else move it to the next transport of the ranked list; give up when the code says a retry cannot
     * help or the task's failover budget is spent.
     */
    void reroute(RuntimeSlice s, PathGroup from, int fromPath, ErrorCode code, String message) {
        Task t = s.task();
        if (t.isTerminal()) {
            s.discard();
            return;
        }
        // A slice that never left its queue (fromPath < 0) spent no attempt.
        boolean retry = !closed && code.retryable() && !(code == ErrorCode.TIMEOUT && t.explicitDeadline)
                && (fromPath < 0 || ++s.retries <= maxAttempts);
        if (!retry) {
            s.giveUp(code, message);
            return;
        }
        if (from.connection.isOpen() && !from.allPathsPaused(System.nanoTime())) {
            s.avoidPath = fromPath;
            if (from.paths.length > 1) {
                logFailover(from.segment, from.describe(fromPath), from.transport.id() + "/another path", message);
            }
            from.enqueue(s, true);
            return;
        }
        try {
            workers.execute(() -> moveToAnotherTransport(s, from, fromPath, code, message));
        } catch (RejectedExecutionException e) {
            s.giveUp(ErrorCode.ENGINE_CLOSED, "engine '" + segmentName + "' closed while rerouting: " + message);
        }
    }

    /** On a worker, because reconnecting may block: the same transport if it reconnects, else the next one. */
    private void moveToAnotherTransport(RuntimeSlice s, PathGroup from, int fromPath, ErrorCode code, String message) {
        Task t = s.task();
        if (t.isTerminal()) {
            s.discard();
            return;
        }
        TransportSlot slot = from.transport;
        if (!from.connection.isOpen()) {
            try {
                PathGroup again = group(t.segment, slot, t.segment.isLocal() ? descriptor : t.segment.descriptor);
                if (!again.allPathsPaused(System.nanoTime())) {
                    s.group = again;
                    again.enqueue(s, true);
                    return;
                }
            } catch (TransferException e) {
                message = message + "; reconnect failed: " + e.getMessage();
            }
        }
        t.exclude(slot.index());
        for (;;) {
            TransportSlot next;
            try {
                next = select(t, s.length(), true);
            } catch (TransferException e) {
                s.giveUp(code, message + "; failover found no other transport: " + e.getMessage());
                return;
            }
            try {
                PathGroup g = group(t.segment, next, t.segment.isLocal() ? descriptor : t.segment.descriptor);
                logFailover(t.segment, from.describe(fromPath), next.id(), message);
                metrics.failover(slot.id(), next.id());
                s.group = g;
                s.avoidPath = -1;
                g.enqueue(s, true);
                return;
            } catch (TransferException e) {
                t.exclude(next.index());
                message = message + "; " + next.id() + ": " + e.getMessage();
            }
        }
    }

    /** One WARN line per (peer, from, to) per second, counting the ones folded into it. */
    private void logFailover(RemoteSegment seg, String from, String to, String cause) {
        long now = System.nanoTime();
        long[] state = failoverLog.computeIfAbsent(seg.name() + '\0' + from + '\0' + to, k -> new long[]{now - 2_000_000_000L, 0});
        synchronized (state) {
            if (now - state[0] >= 1_000_000_000L) {
                long folded = state[1];
                state[0] = now;
                state[1] = 0;
                log.warn("failover to segment '{}': from {} to {} because {}{}", seg.name(), from, to, cause,
                        folded > 0 ? " (" + folded + " more in the last second)" : "");
            } else {
                state[1]++;
            }
        }
    }

    /** Every 50 ms: revive groups whose cooldowns ended, and move queues off groups whose paths are all paused. */
    private void sweep() {
        try {
            long now = System.nanoTime();
            sweep(localSegment, now);
            for (RemoteSegment seg : segments.values()) {
                sweep(seg, now);
            }
        } catch (RuntimeException e) {
            log.error("scheduler sweep failed", e);
        }
    }

    private void sweep(RemoteSegment seg, long now) {
        for (int i = 0; i < seg.groups.length(); i++) {
            PathGroup g = seg.groups.get(i);
            if (g == null || g.queued() == 0) {
                continue;
            }
            if (g.allPathsPaused(now) || !g.connection.isOpen()) {
                for (RuntimeSlice s : g.takeAll()) {
                    reroute(s, g, -1, ErrorCode.PEER_FAILED, "every path of " + g.transport.id() + " to segment '"
                            + seg.name() + "' is paused or closed");
                }
            } else {
                g.drain();
            }
        }
    }

    void recordTask(Task task, TransferStatus status) {
        TransportSlot t = task.transport;
        metrics.record(t == null ? -1 : t.index(), task.opcode, status.state() == TransferState.COMPLETED, task.length,
                System.nanoTime() - task.submitNanos);
    }

    /** Completes a future off the transport's thread, so callers' callbacks cannot stall an I/O loop. */
    void completeAsync(CompletableFuture<TransferStatus> f, TransferStatus status) {
        try {
            workers.execute(() -> f.complete(status));
        } catch (RejectedExecutionException e) {
            f.complete(status);
        }
    }

    // ---------------------------------------------------------------- notifications

    @Override
    public CompletableFuture<Void> sendNotification(SegmentHandle target, String message) {
        ensureOpen();
        RemoteSegment s = own(target);
        byte[] bytes = message.getBytes(StandardCharsets.UTF_8);
        if (bytes.length > Notification.MAX_MESSAGE_BYTES) {
            return CompletableFuture.failedFuture(new TransferException(ErrorCode.INVALID_ARGUMENT, "notification of " + bytes.length
                    + " bytes exceeds the limit of " + Notification.MAX_MESSAGE_BYTES));
        }
        if (s.isLocal()) {
            deliver(new Notification(segmentName, message));
            return CompletableFuture.completedFuture(null);
        }
        SegmentDescriptor d = s.descriptor;
        return control.callAsync(d.host(), d.controlPort(), NOTIFY, bytes).thenApply(x -> null);
    }

    /** Sends a batch's notification; failures are logged, since no caller waits for it. */
    void sendNotification(RemoteSegment s, String message) {
        try {
            sendNotification((SegmentHandle) s, message).whenComplete((v, e) -> {
                if (e != null) {
                    log.warn("notification to segment '{}' failed: {}", s.name(), e.getMessage());
                }
            });
        } catch (TransferException e) {
            log.warn("notification to segment '{}' failed: {}", s.name(), e.getMessage());
        }
    }

    private void deliver(Notification n) {
        // Listeners first: whoever waits on the queue may assume they have seen it.
        for (Consumer<Notification> l : listeners) {
            try {
                l.accept(n);
            } catch (RuntimeException e) {
                log.warn("notification listener failed: {}", e.toString());
            }
        }
        if (!notifications.offer(n)) {
            log.warn("notification from '{}' dropped: {} notifications are waiting to be taken ({})", n.sender(),
                    notifications.size(), CoreKey.NOTIFICATIONS_MAX_QUEUED);
        }
    }

    @Override
    public List<Notification> drainNotifications() {
        List<Notification> out = new ArrayList<>();
        notifications.drainTo(out);
        return out;
    }

    @Override
    public Notification awaitNotification(Duration timeout) throws InterruptedException {
        return notifications.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    @Override
    public void onNotification(Consumer<Notification> listener) {
        listeners.add(listener);
    }

    @Override
    public List<TransportInfo> transports() {
        return transportInfos;
    }

    /** The metrics registry, for embedding hosts and tests. */
    EngineMetrics metrics() {
        return metrics;
    }

    // ---------------------------------------------------------------- close

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        if (keepAlive != null) {
            keepAlive.cancel(false);
        }
        sweeper.cancel(false);
        try {
            directory.unpublish(segmentName);
        } catch (RuntimeException e) {
            log.debug("unpublish of '{}' failed: {}", segmentName, e.getMessage());
        }
        directory.close();
        for (RemoteSegment s : segments.values()) {
            s.stopWatching();
            s.closeConnections();
        }
        localSegment.closeConnections();
        segments.clear();
        for (TransportSlot s : transports) {
            try {
                s.transport().close();
            } catch (RuntimeException e) {
                log.warn("transport '{}' failed to close: {}", s.id(), e.getMessage());
            }
        }
        control.close();
        for (RegisteredBuffer b : registrations.all()) {
            registrations.remove(b);
            b.release();
        }
        metrics.close();
        workers.shutdown();
        scheduler.shutdownNow();
        log.info("engine '{}' closed", segmentName);
    }

    @Override
    public String toString() {
        return "TransferEngine[" + segmentName + "]";
    }
}
