package org.tent4j.integration.nixl;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.MetadataNamespace;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferException;
import org.tent4j.integration.nixl.spi.Backend;
import org.tent4j.integration.nixl.spi.BackendContext;
import org.tent4j.integration.nixl.spi.BackendNotification;
import org.tent4j.integration.nixl.spi.BackendOptions;
import org.tent4j.integration.nixl.spi.BackendProvider;
import org.tent4j.integration.nixl.spi.Span;

/**
 * A NIXL-style agent over tent4j: named, it owns backends (created by canonical id with validated options), memory
 * registrations, its metadata (exchanged as a versioned blob through the engine's metadata stores or straight from a
 * peer's control plane) and the transfer requests it prepares.
 *
 * <p>Backend choice for a request is deterministic: the request's preference list, then the agent's, then every other
 * created backend by id; the first that has the capabilities the request needs (remote or loopback, notifications),
 * takes both memory types and covers every descriptor on both sides wins. The reason is kept on the request and
 * logged. Unlike NIXL, a failed transfer never drops a peer's metadata: only {@link #invalidateRemoteMD} does.
 *
 * <p>Thread-safe.
 */
public final class Agent implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Agent.class);
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,48}");
    /** The label under which the full metadata is published and offered. */
    public static final String FULL = "full";

    private final AgentConfig config;
    private final String name;
    private final TransferEngine engine;
    private final Map<String, BackendProvider> providers;
    private final Map<String, Slot> backends = Collections.synchronizedMap(new LinkedHashMap<>());
    private final List<Region> regions = new CopyOnWriteArrayList<>();
    private final Map<String, Peer> peers = new ConcurrentHashMap<>();
    private final AtomicLong generation = new AtomicLong();
    private final Set<String> published = ConcurrentHashMap.newKeySet();
    private final Set<String> offered = ConcurrentHashMap.newKeySet();
    private final Set<ChoiceKey> loggedChoices = ConcurrentHashMap.newKeySet();
    private volatile List<String> defaultOrder;
    private volatile boolean closed;

    private record Slot(String id, BackendProvider provider, Backend backend, BackendOptions options) {
    }

    /** One registered region: each accepting backend's object for it and, for loopback, its target view. */
    private record Region(MemoryType type, Descriptor descriptor, Map<String, Object> registered, Map<String, Object> loopback) {
    }

    /** What is known of a peer: per backend, its loaded regions. */
    private static final class Peer {
        final String name;
        volatile long generation;
        final Map<String, List<RemoteRegion>> regions = new ConcurrentHashMap<>();

        Peer(String name) {
            this.name = name;
        }
    }

    private record RemoteRegion(MemoryType type, Descriptor descriptor, Object object) {
    }

    private Agent(AgentConfig config, Map<String, BackendProvider> providers, TransferEngine engine) {
        this.config = config;
        this.name = config.name();
        this.providers = providers;
        this.engine = engine;
    }

    /**
     * Builds an agent and its engine, and offers its full metadata on the engine's control plane.
     *
     * @throws NixlException INVALID_PARAM for a bad name, BACKEND if two backend providers claim one id or the engine
     *                       cannot start
     */
    public static Agent create(AgentConfig config) {
        if (!NAME.matcher(config.name()).matches()) {
            throw new NixlException(NixlStatus.INVALID_PARAM, "agent name '" + config.name() + "' must be 1 to 48 characters of [A-Za-z0-9._-]");
        }
        Map<String, BackendProvider> found = BackendLoader.load();
        for (String id : config.backendPreference()) {
            if (!found.containsKey(id)) {
                throw new NixlException(NixlStatus.INVALID_PARAM, "backend preference names '" + id + "', which is not on the class path (found "
                        + found.keySet() + ")");
            }
        }
        TransferEngine engine;
        try {
            engine = TransferEngine.create(config.engine());
        } catch (RuntimeException e) {
            throw new NixlException(NixlStatus.BACKEND, "agent '" + config.name() + "': its engine did not start: " + e.getMessage(), e);
        }
        Agent a = new Agent(config, found, engine);
        engine.offerBlob(offerLabel(FULL), a::getLocalMD);
        log.info("agent '{}' up: backends available {}, metadata listener {}", a.name, found.keySet(), engine.controlEndpoint());
        return a;
    }

    public String name() {
        return name;
    }

    /** The agent's engine (its segment, transports and metadata stores). */
    public TransferEngine engine() {
        return engine;
    }

    /** {@code host:port} where peers fetch this agent's metadata directly ({@link #fetchRemoteMD(String, int, String, Duration)}). */
    public String listenAddress() {
        return engine.controlEndpoint();
    }

    // ---------------------------------------------------------------- backends

    /** Ids of every backend kind found, in their providers' {@code order()}, then by id. */
    public List<String> availableBackends() {
        return List.copyOf(providers.keySet());
    }

    /** A backend kind's capabilities, memory types and options with their defaults, before any instance exists. */
    public BackendDescription describeBackend(String id) {
        BackendProvider p = provider(id);
        return new BackendDescription(p.id(), p.spiLevel(), p.supportsRemote(), p.supportsLocal(), p.supportsNotifications(),
                Set.copyOf(p.memoryTypes()), List.copyOf(p.options()));
    }

    private BackendProvider provider(String id) {
        BackendProvider p = id == null ? null : providers.get(id);
        if (p == null) {
            throw new NixlException(NixlStatus.NOT_FOUND, "no backend '" + id + "' (available: " + providers.keySet() + ")");
        }
        return p;
    }

    /**
     * Creates the one instance of backend {@code id}. A failure is thrown at once with its cause.
     *
     * @throws NixlException NOT_FOUND for an unknown id, NOT_ALLOWED if it exists already, INVALID_PARAM for an unknown
     *                       option key or a bad value (naming it), BACKEND if the backend failed to start
     */
    public BackendHandle createBackend(String id, Map<String, String> options) {
        ensureOpen();
        BackendProvider p = provider(id);
        if (p.supportsRemote() && !p.supportsNotifications()) {
            throw new NixlException(NixlStatus.BACKEND, "backend '" + id + "' supports remote transfers but not notifications; NIXL's contract needs both");
        }
        BackendOptions opts;
        try {
            opts = BackendOptions.resolve(id, p.options(), options);
        } catch (IllegalArgumentException e) {
            throw new NixlException(NixlStatus.INVALID_PARAM, e.getMessage(), e);
        }
        synchronized (backends) {
            if (backends.containsKey(id)) {
                throw new NixlException(NixlStatus.NOT_ALLOWED, "agent '" + name + "' already has backend '" + id + "'");
            }
            Backend b;
            try {
                b = p.create(new BackendContext() {
                    @Override public String agentName() { return name; }
                    @Override public BackendOptions options() { return opts; }
                    @Override public TransferEngine engine() { return engine; }
                });
            } catch (IllegalArgumentException e) {
                throw new NixlException(NixlStatus.INVALID_PARAM, "backend '" + id + "': " + e.getMessage(), e);
            } catch (Exception e) {
                throw new NixlException(NixlStatus.BACKEND, "backend '" + id + "' failed to start: " + e, e);
            }
            backends.put(id, new Slot(id, p, b, opts));
            defaultOrder = null;
        }
        log.info("agent '{}': backend '{}' created with {}", name, id, opts.values());
        return new BackendHandle(id, opts.values());
    }

    /** The effective options of a created backend. */
    public Map<String, String> backendParams(BackendHandle backend) {
        return slot(backend.id()).options().values();
    }

    private Slot slot(String id) {
        Slot s = backends.get(id);
        if (s == null) {
            throw new NixlException(NixlStatus.NOT_FOUND, "agent '" + name + "' has no backend '" + id + "' (created: " + backendIds() + ")");
        }
        return s;
    }

    private List<String> backendIds() {
        synchronized (backends) {
            return List.copyOf(backends.keySet());
        }
    }

    private List<Slot> slots() {
        synchronized (backends) {
            return List.copyOf(backends.values());
        }
    }

    // ---------------------------------------------------------------- memory

    /** Registers every descriptor with every created backend that takes the list's memory type. */
    public void registerMem(DescriptorList descriptors) {
        registerMem(descriptors, List.of());
    }

    /**
     * Registers every descriptor with the named backends (all that take the type when empty). Best effort per
     * descriptor: it is registered if at least one backend accepted it.
     *
     * @throws NixlException INVALID_PARAM for an overlap with an earlier registration, BACKEND naming each backend's
     *                       refusal when none accepted a descriptor (descriptors before it stay registered)
     */
    public void registerMem(DescriptorList descriptors, List<String> backendIds) {
        ensureOpen();
        List<Slot> chosen = new ArrayList<>();
        for (Slot s : backendIds.isEmpty() ? slots() : backendIds.stream().map(this::slot).toList()) {
            if (s.provider().memoryTypes().contains(descriptors.type())) {
                chosen.add(s);
            }
        }
        if (chosen.isEmpty()) {
            throw new NixlException(NixlStatus.NOT_FOUND, "no created backend of agent '" + name + "' takes " + descriptors.type()
                    + " memory (created: " + backendIds() + ")");
        }
        for (Descriptor d : descriptors.descriptors()) {
            for (Region r : regions) {
                if (r.type() == descriptors.type() && r.descriptor().devId() == d.devId()
                        && d.address() < r.descriptor().end() && r.descriptor().address() < d.end()) {
                    throw new NixlException(NixlStatus.INVALID_PARAM, descriptors.type() + " " + d + " overlaps registered " + r.descriptor());
                }
            }
            Map<String, Object> done = new LinkedHashMap<>();
            Map<String, Object> loop = new LinkedHashMap<>();
            List<String> refusals = new ArrayList<>();
            for (Slot s : chosen) {
                try {
                    Object md = s.backend().register(d, descriptors.type());
                    done.put(s.id(), md);
                    if (s.provider().supportsLocal()) {
                        loop.put(s.id(), s.backend().loadLocal(md));
                    }
                } catch (RuntimeException e) {
                    refusals.add(s.id() + ": " + e.getMessage());
                }
            }
            if (done.isEmpty()) {
                throw new NixlException(NixlStatus.BACKEND, "no backend registered " + descriptors.type() + " " + d + ": " + refusals);
            }
            if (!refusals.isEmpty()) {
                log.info("agent '{}': {} {} registered with {} only ({})", name, descriptors.type(), d, done.keySet(), refusals);
            }
            regions.add(new Region(descriptors.type(), d, done, loop));
        }
        generation.incrementAndGet();
    }

    /** Deregisters descriptors that match earlier registrations exactly. */
    public void deregisterMem(DescriptorList descriptors) {
        for (Descriptor d : descriptors.descriptors()) {
            Region r = regions.stream().filter(x -> x.type() == descriptors.type() && x.descriptor().equals(d)).findFirst()
                    .orElseThrow(() -> new NixlException(NixlStatus.NOT_FOUND, descriptors.type() + " " + d
                            + " is not a registration of agent '" + name + "' (deregister exactly what was registered)"));
            regions.remove(r);
            r.registered().forEach((id, md) -> {
                Slot s = backends.get(id);
                if (s != null) {
                    s.backend().deregister(md);
                }
            });
        }
        generation.incrementAndGet();
    }

    private Region regionOf(MemoryType type, Descriptor d) {
        for (Region r : regions) {
            if (r.type() == type && r.descriptor().covers(d)) {
                return r;
            }
        }
        return null;
    }

    // ---------------------------------------------------------------- metadata

    /** Everything a peer needs to reach this agent: each remote backend's connection info and every region's public data. */
    public byte[] getLocalMD() {
        return metadata(null, true).encode();
    }

    /**
     * Only the regions that hold {@code descriptors}, with the connection info only if {@code withConnectionInfo}.
     *
     * @throws NixlException NOT_FOUND naming a descriptor no registration holds
     */
    public byte[] getLocalPartialMD(DescriptorList descriptors, boolean withConnectionInfo) {
        List<Region> chosen = new ArrayList<>();
        for (Descriptor d : descriptors.descriptors()) {
            Region r = regionOf(descriptors.type(), d);
            if (r == null) {
                throw new NixlException(NixlStatus.NOT_FOUND, descriptors.type() + " " + d + " is not registered with agent '" + name + "'");
            }
            if (!chosen.contains(r)) {
                chosen.add(r);
            }
        }
        return metadata(chosen, withConnectionInfo).encode();
    }

    private AgentMetadata metadata(List<Region> only, boolean withConnectionInfo) {
        List<AgentMetadata.Section> sections = new ArrayList<>();
        for (Slot s : slots()) {
            if (!s.provider().supportsRemote()) {
                continue;
            }
            List<AgentMetadata.Region> rs = new ArrayList<>();
            for (Region r : only == null ? regions : only) {
                Object md = r.registered().get(s.id());
                if (md != null) {
                    rs.add(new AgentMetadata.Region(r.type(), r.descriptor(), s.backend().publicData(md)));
                }
            }
            sections.add(new AgentMetadata.Section(s.id(), withConnectionInfo ? s.backend().connectionInfo() : null, rs));
        }
        return new AgentMetadata(name, generation.get(), only != null, sections);
    }

    /**
     * Loads a peer's metadata (full or partial) into every backend of the same id; sections of backends this agent
     * does not have are skipped. Does not connect. Full metadata older than what is loaded is ignored.
     *
     * @return the peer's name
     * @throws NixlException INVALID_PARAM for a malformed blob or this agent's own metadata
     */
    public String loadRemoteMD(byte[] blob) {
        ensureOpen();
        AgentMetadata md = AgentMetadata.decode(blob);
        if (md.agent().equals(name)) {
            throw new NixlException(NixlStatus.INVALID_PARAM, "agent '" + name + "' was given its own metadata to load");
        }
        if (!NAME.matcher(md.agent()).matches()) {
            throw new NixlException(NixlStatus.INVALID_PARAM, "bad agent metadata: agent name '" + md.agent() + "'");
        }
        boolean known = peers.containsKey(md.agent());
        Peer peer = peers.computeIfAbsent(md.agent(), Peer::new);
        try {
            load(md, peer);
        } catch (RuntimeException e) {
            if (!known && peer.regions.isEmpty()) {
                peers.remove(md.agent(), peer);
            }
            throw e;
        }
        return md.agent();
    }

    private void load(AgentMetadata md, Peer peer) {
        synchronized (peer) {
            if (!md.partial() && md.generation() < peer.generation) {
                log.info("agent '{}': metadata of '{}' generation {} is older than the loaded {}; ignored", name, md.agent(),
                        md.generation(), peer.generation);
                return;
            }
            for (AgentMetadata.Section sec : md.sections()) {
                Slot s = backends.get(sec.backend());
                if (s == null) {
                    log.debug("agent '{}': metadata of '{}' has a section for backend '{}', which this agent lacks; skipped", name,
                            md.agent(), sec.backend());
                    continue;
                }
                if (sec.connectionInfo() != null) {
                    s.backend().loadRemoteConnectionInfo(md.agent(), sec.connectionInfo());
                }
                List<RemoteRegion> loaded = new ArrayList<>();
                for (AgentMetadata.Region r : sec.regions()) {
                    loaded.add(new RemoteRegion(r.type(), r.descriptor(),
                            s.backend().loadRemote(md.agent(), r.descriptor(), r.type(), r.publicData())));
                }
                if (md.partial()) {
                    List<RemoteRegion> merged = new ArrayList<>(peer.regions.getOrDefault(sec.backend(), List.of()));
                    merged.removeIf(old -> loaded.stream().anyMatch(n -> n.type() == old.type() && n.descriptor().equals(old.descriptor())));
                    merged.addAll(loaded);
                    peer.regions.put(sec.backend(), List.copyOf(merged));
                } else {
                    peer.regions.put(sec.backend(), List.copyOf(loaded));
                }
            }
            if (!md.partial()) {
                peer.generation = md.generation();
            }
        }
    }

    /** Drops a peer's metadata and closes every backend's connections to it. */
    public void invalidateRemoteMD(String agent) {
        Peer p = peers.remove(agent);
        if (p == null) {
            throw new NixlException(NixlStatus.NOT_FOUND, "agent '" + name + "' has no metadata of '" + agent + "'");
        }
        for (Slot s : slots()) {
            s.backend().unloadRemote(agent);
        }
    }

    /** Whether metadata of {@code agent} is loaded and, if {@code descriptors} is given, covers all of them. */
    public boolean checkRemoteMD(String agent, DescriptorList descriptors) {
        Peer p = peers.get(agent);
        if (p == null) {
            return false;
        }
        if (descriptors == null) {
            return true;
        }
        for (Descriptor d : descriptors.descriptors()) {
            boolean covered = p.regions.values().stream().flatMap(List::stream)
                    .anyMatch(r -> r.type() == descriptors.type() && r.descriptor().covers(d));
            if (!covered) {
                return false;
            }
        }
        return true;
    }

    private MetadataNamespace namespace() {
        try {
            return engine.metadataNamespace(config.namespace());
        } catch (TransferException e) {
            throw translate(e, "metadata store of agent '" + name + "'");
        }
    }

    private static String storeKey(String agent, String label) {
        return agent + "/" + label;
    }

    private static String offerLabel(String label) {
        return "nixl-" + label;
    }

    private static void checkLabel(String label) {
        if (label == null || !NAME.matcher(label).matches()) {
            throw new NixlException(NixlStatus.INVALID_PARAM, "metadata label '" + label + "' must be 1 to 48 characters of [A-Za-z0-9._-]");
        }
    }

    /** Publishes the full metadata in the metadata stores (key {@code <namespace>/<agent>/full}). */
    public void sendLocalMD() {
        put(FULL, getLocalMD());
    }

    /** Publishes partial metadata in the metadata stores under {@code label}. */
    public void sendLocalPartialMD(DescriptorList descriptors, boolean withConnectionInfo, String label) {
        checkLabel(label);
        put(label, getLocalPartialMD(descriptors, withConnectionInfo));
    }

    private void put(String label, byte[] blob) {
        ensureOpen();
        try {
            namespace().put(storeKey(name, label), blob, Duration.ZERO);
            published.add(label);
        } catch (TransferException e) {
            throw translate(e, "publishing metadata '" + label + "' of agent '" + name + "'");
        }
    }

    /** Offers partial metadata on this agent's listener under {@code label} (the full metadata is always offered). */
    public void offerLocalPartialMD(DescriptorList descriptors, boolean withConnectionInfo, String label) {
        checkLabel(label);
        if (label.equals(FULL)) {
            throw new NixlException(NixlStatus.INVALID_PARAM, "label '" + FULL + "' is the full metadata, always offered");
        }
        byte[] blob = getLocalPartialMD(descriptors, withConnectionInfo);
        engine.offerBlob(offerLabel(label), () -> blob);
        offered.add(label);
    }

    /**
     * Fetches a peer's metadata from the metadata stores, waiting up to {@code timeout} for it to appear, and loads it.
     *
     * @return the peer's name
     * @throws NixlException TIMEOUT if it did not appear, BACKEND if no store answered
     */
    public String fetchRemoteMD(String agent, String label, Duration timeout) {
        checkLabel(label);
        byte[] blob;
        try {
            blob = namespace().await(storeKey(agent, label), timeout);
        } catch (TransferException e) {
            throw translate(e, "fetching metadata '" + label + "' of agent '" + agent + "'");
        }
        String got = loadRemoteMD(blob);
        if (!got.equals(agent)) {
            invalidateRemoteMD(got);
            throw new NixlException(NixlStatus.MISMATCH, "metadata stored for agent '" + agent + "' names agent '" + got + "'");
        }
        return got;
    }

    /**
     * Fetches a peer's metadata straight from its listener at {@code host:port} ({@link #listenAddress()} there) and
     * loads it.
     *
     * @return the peer's name
     * @throws NixlException REMOTE_DISCONNECT if it cannot be reached, NOT_FOUND if it offers nothing under {@code label}
     */
    public String fetchRemoteMD(String host, int port, String label, Duration timeout) {
        checkLabel(label);
        byte[] blob;
        try {
            blob = engine.fetchBlob(host, port, offerLabel(label), timeout);
        } catch (TransferException e) {
            throw translate(e, "fetching metadata '" + label + "' from " + host + ":" + port);
        }
        return loadRemoteMD(blob);
    }

    /** Removes everything this agent published in the stores and withdraws its partial offers. */
    public void invalidateLocalMD() {
        for (String label : List.copyOf(published)) {
            try {
                namespace().delete(storeKey(name, label));
                published.remove(label);
            } catch (TransferException e) {
                throw translate(e, "removing metadata '" + label + "' of agent '" + name + "'");
            }
        }
        for (String label : List.copyOf(offered)) {
            engine.offerBlob(offerLabel(label), null);
            offered.remove(label);
        }
    }

    private static NixlException translate(TransferException e, String what) {
        NixlStatus s = switch (e.code()) {
            case TIMEOUT -> NixlStatus.TIMEOUT;
            case UNKNOWN_SEGMENT -> NixlStatus.NOT_FOUND;
            case PEER_UNREACHABLE, PEER_FAILED -> NixlStatus.REMOTE_DISCONNECT;
            case INVALID_ARGUMENT -> NixlStatus.INVALID_PARAM;
            case CANCELED -> NixlStatus.CANCELED;
            default -> NixlStatus.BACKEND;
        };
        return new NixlException(s, what + ": " + e.getMessage(), e);
    }

    // ---------------------------------------------------------------- transfers

    /**
     * Resolves descriptors once for requests built by index: {@code agent} is {@code ""} for this agent's initiator
     * side, this agent's own name for a loopback target, or a peer whose metadata is loaded.
     */
    public PreparedList prepXferDlist(String agent, DescriptorList descriptors) {
        ensureOpen();
        boolean initiator = agent.isEmpty();
        boolean loopback = agent.equals(name);
        Map<String, Object[]> byBackend = new LinkedHashMap<>();
        if (initiator || loopback) {
            for (Slot s : slots()) {
                Object[] objs = new Object[descriptors.size()];
                for (int i = 0; i < objs.length; i++) {
                    Region r = regionOf(descriptors.type(), descriptors.get(i));
                    objs[i] = r == null ? null : (initiator ? r.registered() : r.loopback()).get(s.id());
                }
                byBackend.put(s.id(), objs);
            }
        } else {
            Peer p = peers.get(agent);
            if (p == null) {
                throw new NixlException(NixlStatus.NOT_FOUND, "agent '" + name + "' has no metadata of '" + agent + "' (load or fetch it first)");
            }
            p.regions.forEach((id, rs) -> {
                Object[] objs = new Object[descriptors.size()];
                for (int i = 0; i < objs.length; i++) {
                    for (RemoteRegion r : rs) {
                        if (r.type() == descriptors.type() && r.descriptor().covers(descriptors.get(i))) {
                            objs[i] = r.object();
                            break;
                        }
                    }
                }
                byBackend.put(id, objs);
            });
        }
        return new PreparedList(initiator ? name : agent, initiator, descriptors, byBackend);
    }

    /** One-shot request: {@code local.get(i)} moves to or from {@code remote.get(i)} of {@code remoteAgent}. */
    public XferRequest createXferReq(Opcode op, DescriptorList local, DescriptorList remote, String remoteAgent, XferOptions options) {
        if (local.size() != remote.size()) {
            throw new NixlException(NixlStatus.MISMATCH, "local list has " + local.size() + " descriptors, remote list " + remote.size());
        }
        int[] idx = new int[local.size()];
        for (int i = 0; i < idx.length; i++) {
            idx[i] = i;
        }
        return build(op, prepXferDlist("", local), idx, prepXferDlist(remoteAgent, remote), idx, options, false);
    }

    /**
     * A request from two prepared lists by index: entry {@code k} pairs {@code local[localIdx[k]]} with
     * {@code remote[remoteIdx[k]]}; neighbours contiguous on both sides (and in one registration) are merged.
     */
    public XferRequest makeXferReq(Opcode op, PreparedList local, int[] localIdx, PreparedList remote, int[] remoteIdx, XferOptions options) {
        if (!local.initiator) {
            throw new NixlException(NixlStatus.INVALID_PARAM, "the local list must be prepared for the initiator (agent \"\"), not '" + local.agent + "'");
        }
        if (remote.initiator) {
            throw new NixlException(NixlStatus.INVALID_PARAM, "the remote list must be prepared for a peer or this agent's name, not \"\"");
        }
        if (local.released || remote.released) {
            throw new NixlException(NixlStatus.NOT_ALLOWED, "a prepared list was released");
        }
        if (localIdx.length != remoteIdx.length) {
            throw new NixlException(NixlStatus.MISMATCH, localIdx.length + " local indices, " + remoteIdx.length + " remote indices");
        }
        return build(op, local, localIdx, remote, remoteIdx, options, !options.skipMerge());
    }

    private XferRequest build(Opcode op, PreparedList local, int[] li, PreparedList remote, int[] ri, XferOptions options, boolean merge) {
        ensureOpen();
        if (li.length == 0) {
            throw new NixlException(NixlStatus.INVALID_PARAM, "a request needs at least one descriptor");
        }
        long bytes = 0;
        for (int k = 0; k < li.length; k++) {
            if (li[k] < 0 || li[k] >= local.size() || ri[k] < 0 || ri[k] >= remote.size()) {
                throw new NixlException(NixlStatus.INVALID_PARAM, "entry " + k + ": index " + li[k] + " / " + ri[k] + " outside lists of "
                        + local.size() + " / " + remote.size());
            }
            long a = local.descriptors.get(li[k]).length();
            long b = remote.descriptors.get(ri[k]).length();
            if (a != b) {
                throw new NixlException(NixlStatus.MISMATCH, "entry " + k + ": local " + local.descriptors.get(li[k]) + " is " + a
                        + " bytes, remote " + remote.descriptors.get(ri[k]) + " is " + b);
            }
            bytes += a;
        }
        String peer = remote.agent;
        boolean loopback = peer.equals(name);
        Choice c = choose(options.backends(), loopback, options.notification() != null, local, li, remote, ri);
        Object[] lo = local.regions.get(c.slot.id());
        Object[] ro = remote.regions.get(c.slot.id());
        List<Span> ls = new ArrayList<>(li.length);
        List<Span> rs = new ArrayList<>(li.length);
        for (int k = 0; k < li.length; k++) {
            Descriptor ld = local.descriptors.get(li[k]);
            Descriptor rd = remote.descriptors.get(ri[k]);
            int last = ls.size() - 1;
            if (merge && last >= 0) {
                Span pl = ls.get(last);
                Span pr = rs.get(last);
                if (pl.region() == lo[li[k]] && pr.region() == ro[ri[k]] && pl.address() + pl.length() == ld.address()
                        && pr.address() + pr.length() == rd.address() && pl.devId() == ld.devId() && pr.devId() == rd.devId()) {
                    ls.set(last, new Span(pl.region(), pl.address(), pl.length() + ld.length(), pl.devId()));
                    rs.set(last, new Span(pr.region(), pr.address(), pr.length() + rd.length(), pr.devId()));
                    continue;
                }
            }
            ls.add(new Span(lo[li[k]], ld.address(), ld.length(), ld.devId()));
            rs.add(new Span(ro[ri[k]], rd.address(), rd.length(), rd.devId()));
        }
        Object handle;
        try {
            handle = c.slot.backend().prepare(op, List.copyOf(ls), List.copyOf(rs), peer);
        } catch (TransferException e) {
            throw new NixlException(NixlStatus.BACKEND, "backend '" + c.slot.id() + "' could not prepare a request to '" + peer + "': " + e.getMessage(), e);
        }
        return new XferRequest(peer, c.slot.id(), c.slot.backend(), handle, c::reason, bytes, ls.size(), options.notification());
    }

    /** A backend choice; its reason is put into words only when asked for. */
    private record Choice(Slot slot, List<String> order, Map<String, String> skipped, String target, MemoryType from, MemoryType to) {
        String reason() {
            return "backend '" + slot.id() + "' chosen for " + target + " " + from + "->" + to + " from order " + order
                    + (skipped.isEmpty() ? "" : "; skipped " + skipped);
        }
    }

    private record ChoiceKey(String peer, MemoryType from, MemoryType to, List<String> order, String chosen) {
    }

    /** Agent preference, then every other created backend in provider order; recomputed when a backend is created. */
    private List<String> defaultOrder() {
        List<String> order = defaultOrder;
        if (order == null) {
            List<String> o = new ArrayList<>();
            synchronized (backends) {
                for (String id : config.backendPreference()) {
                    if (backends.containsKey(id)) {
                        o.add(id);
                    }
                }
                for (String id : providers.keySet()) {
                    if (backends.containsKey(id) && !o.contains(id)) {
                        o.add(id);
                    }
                }
            }
            defaultOrder = order = List.copyOf(o);
        }
        return order;
    }

    private Choice choose(List<String> requested, boolean loopback, boolean notify, PreparedList local, int[] li, PreparedList remote, int[] ri) {
        List<String> order = defaultOrder();
        if (!requested.isEmpty()) {
            List<String> o = new ArrayList<>();
            for (String id : requested) {
                provider(id);
                if (!backends.containsKey(id)) {
                    throw new NixlException(NixlStatus.NOT_FOUND, "request prefers backend '" + id + "', which agent '" + name + "' has not created");
                }
                if (!o.contains(id)) {
                    o.add(id);
                }
            }
            for (String id : order) {
                if (!o.contains(id)) {
                    o.add(id);
                }
            }
            order = o;
        }
        Map<String, String> skipped = Map.of();
        String target = loopback ? "loopback" : "agent '" + remote.agent + "'";
        for (String id : order) {
            Slot s = backends.get(id);
            BackendProvider p = s.provider();
            String why;
            if (loopback && !p.supportsLocal()) {
                why = "no loopback";
            } else if (!loopback && !p.supportsRemote()) {
                why = "no remote transfers";
            } else if (notify && !p.supportsNotifications()) {
                why = "no notifications";
            } else if (!p.memoryTypes().contains(local.type()) || !p.memoryTypes().contains(remote.type())) {
                why = "does not take " + local.type() + "->" + remote.type();
            } else {
                why = uncovered(local, li, s.id(), "local");
                if (why == null) {
                    why = uncovered(remote, ri, s.id(), loopback ? "loopback target" : "agent '" + remote.agent + "'");
                }
            }
            if (why == null) {
                Choice c = new Choice(s, order, skipped, target, local.type(), remote.type());
                if (loggedChoices.add(new ChoiceKey(remote.agent, local.type(), remote.type(), order, id))) {
                    log.info("agent '{}': {}", name, c.reason());
                } else if (log.isDebugEnabled()) {
                    log.debug("agent '{}': {}", name, c.reason());
                }
                return c;
            }
            if (skipped.isEmpty()) {
                skipped = new LinkedHashMap<>();
            }
            skipped.put(id, why);
        }
        throw new NixlException(NixlStatus.NOT_FOUND, "no backend of agent '" + name + "' can carry " + local.type() + "->" + remote.type()
                + " to " + (loopback ? "itself" : "agent '" + remote.agent + "'") + ": " + (skipped.isEmpty() ? "none created" : skipped));
    }

    private static String uncovered(PreparedList list, int[] idx, String backend, String side) {
        Object[] objs = list.regions.get(backend);
        for (int k = 0; k < idx.length; k++) {
            if (objs == null || objs[idx[k]] == null) {
                return side + " descriptor " + idx[k] + " (" + list.descriptors.get(idx[k]) + ") not registered with it";
            }
        }
        return null;
    }

    // ---------------------------------------------------------------- notifications

    /** Sends {@code message} to {@code agent} on its own, on the first notifying backend that knows the peer. */
    public void genNotif(String agent, byte[] message) {
        ensureOpen();
        Peer p = peers.get(agent);
        if (p == null) {
            throw new NixlException(NixlStatus.NOT_FOUND, "agent '" + name + "' has no metadata of '" + agent + "'");
        }
        for (String id : defaultOrder()) {
            Slot s = backends.get(id);
            if (s != null && s.provider().supportsNotifications() && p.regions.containsKey(id)) {
                s.backend().sendNotification(agent, message);
                return;
            }
        }
        throw new NixlException(NixlStatus.NOT_FOUND, "no notifying backend of agent '" + name + "' knows agent '" + agent + "'");
    }

    /** Every notification received since the last call, by sending agent, in arrival order per agent. */
    public Map<String, List<byte[]>> getNotifs() {
        Map<String, List<byte[]>> out = new LinkedHashMap<>();
        for (Slot s : slots()) {
            if (s.provider().supportsNotifications()) {
                for (BackendNotification n : s.backend().drainNotifications()) {
                    out.computeIfAbsent(n.agent(), k -> new ArrayList<>()).add(n.message());
                }
            }
        }
        return out;
    }

    // ---------------------------------------------------------------- lifecycle

    private void ensureOpen() {
        if (closed) {
            throw new NixlException(NixlStatus.NOT_ALLOWED, "agent '" + name + "' is closed");
        }
    }

    /** Closes every backend and the engine; published metadata is removed. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            if (!published.isEmpty()) {
                invalidateLocalMD();
            }
        } catch (NixlException e) {
            log.debug("agent '{}': metadata left in the store: {}", name, e.getMessage());
        }
        List<Slot> all = slots();
        for (int i = all.size() - 1; i >= 0; i--) {
            try {
                all.get(i).backend().close();
            } catch (RuntimeException e) {
                log.warn("agent '{}': backend '{}' failed to close: {}", name, all.get(i).id(), e.toString());
            }
        }
        engine.close();
    }

    @Override
    public String toString() {
        return "agent '" + name + "'";
    }
}
