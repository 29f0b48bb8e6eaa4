package org.tent4j.integration.nixl;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferEngine;
import org.tent4j.integration.nixl.spi.BackendNotification;
import org.tent4j.integration.nixl.spi.BackendProvider;

/**
 * A NIXL-style agent over tent4j: named, it owns backends (created by canonical id with validated options), memory
 * registrations, its metadata (exchanged as a versioned blob through the engine's metadata stores or straight from a
 * peer's control plane) and the transfer requests it prepares.
 *
 * <p>A facade over its parts: {@link AgentBackends}, {@link AgentMemory}, {@link MetadataExchange} (its own metadata
 * and its peers') and {@link TransferPlanner} (prepared lists, backend choice, requests; the choice is deterministic
 * and its reason kept on the request). Unlike NIXL, a failed transfer never drops a peer's metadata: only
 * {@link #invalidateRemoteMD} does.
 *
 * <p>Thread-safe.
 */
public final class Agent implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Agent.class);
    /** The label under which the full metadata is published and offered. */
    public static final String FULL = "full";

    private final String name;
    private final TransferEngine engine;
    private final AgentBackends backends;
    private final AgentMemory memory;
    private final MetadataExchange exchange;
    private final TransferPlanner planner;
    private volatile boolean closed;

    private Agent(AgentConfig config, Map<String, BackendProvider> providers, TransferEngine engine) {
        this.name = config.name();
        this.engine = engine;
        this.backends = new AgentBackends(name, config.backendPreference(), providers);
        this.memory = new AgentMemory(name, backends);
        this.exchange = new MetadataExchange(name, config.namespace(), engine, backends, memory);
        this.planner = new TransferPlanner(name, backends, memory, exchange);
    }

    /**
     * Builds an agent and its engine, and offers its full metadata on the engine's control plane.
     *
     * @throws NixlException INVALID_PARAM for a bad name, BACKEND if two backend providers claim one id or the engine
     *                       cannot start
     */
    public static Agent create(AgentConfig config) {
        if (!MetadataExchange.NAME.matcher(config.name()).matches()) {
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
        a.exchange.offerFull();
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
        return backends.available();
    }

    /** A backend kind's capabilities, memory types and options with their defaults, before any instance exists. */
    public BackendDescription describeBackend(String id) {
        return backends.describe(id);
    }

    /**
     * Creates the one instance of backend {@code id}. A failure is thrown at once with its cause.
     *
     * @throws NixlException NOT_FOUND for an unknown id, NOT_ALLOWED if it exists already, INVALID_PARAM for an unknown
     *                       option key or a bad value (naming it), BACKEND if the backend failed to start
     */
    public BackendHandle createBackend(String id, Map<String, String> options) {
        ensureOpen();
        return backends.create(id, options, engine);
    }

    /** The effective options of a created backend. */
    public Map<String, String> backendParams(BackendHandle backend) {
        return backends.slot(backend.id()).options().values();
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
        memory.register(descriptors, backendIds);
    }

    /** Deregisters descriptors that match earlier registrations exactly. */
    public void deregisterMem(DescriptorList descriptors) {
        memory.deregister(descriptors);
    }

    // ---------------------------------------------------------------- metadata

    /** Everything a peer needs to reach this agent: each remote backend's connection info and every region's public data. */
    public byte[] getLocalMD() {
        return exchange.local();
    }

    /**
     * Only the regions that hold {@code descriptors}, with the connection info only if {@code withConnectionInfo}.
     *
     * @throws NixlException NOT_FOUND naming a descriptor no registration holds
     */
    public byte[] getLocalPartialMD(DescriptorList descriptors, boolean withConnectionInfo) {
        return exchange.localPartial(descriptors, withConnectionInfo);
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
        return exchange.load(blob);
    }

    /** Drops a peer's metadata and closes every backend's connections to it. */
    public void invalidateRemoteMD(String agent) {
        exchange.invalidate(agent);
    }

    /** Whether metadata of {@code agent} is loaded and, if {@code descriptors} is given, covers all of them. */
    public boolean checkRemoteMD(String agent, DescriptorList descriptors) {
        return exchange.check(agent, descriptors);
    }

    /** Publishes the full metadata in the metadata stores (key {@code <namespace>/<agent>/full}). */
    public void sendLocalMD() {
        ensureOpen();
        exchange.publish(FULL, getLocalMD());
    }

    /** Publishes partial metadata in the metadata stores under {@code label}. */
    public void sendLocalPartialMD(DescriptorList descriptors, boolean withConnectionInfo, String label) {
        MetadataExchange.checkLabel(label);
        byte[] blob = getLocalPartialMD(descriptors, withConnectionInfo);
        ensureOpen();
        exchange.publish(label, blob);
    }

    /** Offers partial metadata on this agent's listener under {@code label} (the full metadata is always offered). */
    public void offerLocalPartialMD(DescriptorList descriptors, boolean withConnectionInfo, String label) {
        MetadataExchange.checkLabel(label);
        if (label.equals(FULL)) {
            throw new NixlException(NixlStatus.INVALID_PARAM, "label '" + FULL + "' is the full metadata, always offered");
        }
        exchange.offer(label, getLocalPartialMD(descriptors, withConnectionInfo));
    }

    /**
     * Fetches a peer's metadata from the metadata stores, waiting up to {@code timeout} for it to appear, and loads it.
     *
     * @return the peer's name
     * @throws NixlException TIMEOUT if it did not appear, BACKEND if no store answered
     */
    public String fetchRemoteMD(String agent, String label, Duration timeout) {
        MetadataExchange.checkLabel(label);
        return exchange.fetchStored(agent, label, timeout);
    }

    /**
     * Fetches a peer's metadata straight from its listener at {@code host:port} ({@link #listenAddress()} there) and
     * loads it.
     *
     * @return the peer's name
     * @throws NixlException REMOTE_DISCONNECT if it cannot be reached, NOT_FOUND if it offers nothing under {@code label}
     */
    public String fetchRemoteMD(String host, int port, String label, Duration timeout) {
        MetadataExchange.checkLabel(label);
        return exchange.fetchDirect(host, port, label, timeout);
    }

    /** Removes everything this agent published in the stores and withdraws its partial offers. */
    public void invalidateLocalMD() {
        exchange.withdraw();
    }

    // ---------------------------------------------------------------- transfers

    /**
     * Resolves descriptors once for requests built by index: {@code agent} is {@code ""} for this agent's initiator
     * side, this agent's own name for a loopback target, or a peer whose metadata is loaded.
     */
    public PreparedList prepXferDlist(String agent, DescriptorList descriptors) {
        ensureOpen();
        return planner.prepare(agent, descriptors);
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
        PreparedList l = prepXferDlist("", local);
        PreparedList r = prepXferDlist(remoteAgent, remote);
        ensureOpen();
        return planner.build(op, l, idx, r, idx, options, false);
    }

    /**
     * A request from two prepared lists by index: entry {@code k} pairs {@code local[localIdx[k]]} with
     * {@code remote[remoteIdx[k]]}; neighbours contiguous on both sides (and in one registration) are merged.
     */
    public XferRequest makeXferReq(Opcode op, PreparedList local, int[] localIdx, PreparedList remote, int[] remoteIdx, XferOptions options) {
        ensureOpen();
        return planner.make(op, local, localIdx, remote, remoteIdx, options);
    }

    // ---------------------------------------------------------------- notifications

    /** Sends {@code message} to {@code agent} on its own, on the first notifying backend that knows the peer. */
    public void genNotif(String agent, byte[] message) {
        ensureOpen();
        MetadataExchange.Peer p = exchange.peer(agent);
        if (p == null) {
            throw new NixlException(NixlStatus.NOT_FOUND, "agent '" + name + "' has no metadata of '" + agent + "'");
        }
        for (String id : backends.defaultOrder()) {
            AgentBackends.Slot s = backends.find(id);
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
        for (AgentBackends.Slot s : backends.slots()) {
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
            if (exchange.anyPublished()) {
                exchange.withdraw();
            }
        } catch (NixlException e) {
            log.debug("agent '{}': metadata left in the store: {}", name, e.getMessage());
        }
        backends.closeAll();
        engine.close();
    }

    @Override
    public String toString() {
        return "agent '" + name + "'";
    }
}
