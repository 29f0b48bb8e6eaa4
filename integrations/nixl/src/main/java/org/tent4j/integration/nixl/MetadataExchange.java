package org.tent4j.integration.nixl;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.MetadataNamespace;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferException;

/**
 * An agent's metadata both ways: its own as a blob (full or partial), published in the engine's metadata stores or
 * offered on its control plane; its peers' as loaded, per backend, from blobs it was given or fetched.
 */
final class MetadataExchange {
    private static final Logger log = LoggerFactory.getLogger(MetadataExchange.class);
    static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,48}");

    /** What is known of a peer: per backend, its loaded regions. */
    static final class Peer {
        final String name;
        volatile long generation;
        final Map<String, List<RemoteRegion>> regions = new ConcurrentHashMap<>();

        Peer(String name) {
            this.name = name;
        }
    }

    record RemoteRegion(MemoryType type, Descriptor descriptor, Object object) {
    }

    private final String agent;
    private final String namespace;
    private final TransferEngine engine;
    private final AgentBackends backends;
    private final AgentMemory memory;
    private final Map<String, Peer> peers = new ConcurrentHashMap<>();
    private final Set<String> published = ConcurrentHashMap.newKeySet();
    private final Set<String> offered = ConcurrentHashMap.newKeySet();

    MetadataExchange(String agent, String namespace, TransferEngine engine, AgentBackends backends, AgentMemory memory) {
        this.agent = agent;
        this.namespace = namespace;
        this.engine = engine;
        this.backends = backends;
        this.memory = memory;
    }

    // ---------------------------------------------------------------- this agent's

    byte[] local() {
        return metadata(null, true).encode();
    }

    byte[] localPartial(DescriptorList descriptors, boolean withConnectionInfo) {
        List<AgentMemory.Region> chosen = new ArrayList<>();
        for (Descriptor d : descriptors.descriptors()) {
            AgentMemory.Region r = memory.regionOf(descriptors.type(), d);
            if (r == null) {
                throw new NixlException(NixlStatus.NOT_FOUND, descriptors.type() + " " + d + " is not registered with agent '" + agent + "'");
            }
            if (!chosen.contains(r)) {
                chosen.add(r);
            }
        }
        return metadata(chosen, withConnectionInfo).encode();
    }

    private AgentMetadata metadata(List<AgentMemory.Region> only, boolean withConnectionInfo) {
        List<AgentMetadata.Section> sections = new ArrayList<>();
        for (AgentBackends.Slot s : backends.slots()) {
            if (!s.provider().supportsRemote()) {
                continue;
            }
            List<AgentMetadata.Region> rs = new ArrayList<>();
            for (AgentMemory.Region r : only == null ? memory.regions() : only) {
                Object md = r.registered().get(s.id());
                if (md != null) {
                    rs.add(new AgentMetadata.Region(r.type(), r.descriptor(), s.backend().publicData(md)));
                }
            }
            sections.add(new AgentMetadata.Section(s.id(), withConnectionInfo ? s.backend().connectionInfo() : null, rs));
        }
        return new AgentMetadata(agent, memory.generation(), only != null, sections);
    }

    /** Offers the full metadata, built at each fetch, on the engine's control plane. */
    void offerFull() {
        engine.offerBlob(offerLabel(Agent.FULL), this::local);
    }

    void publish(String label, byte[] blob) {
        try {
            namespace().put(storeKey(agent, label), blob, Duration.ZERO);
            published.add(label);
        } catch (TransferException e) {
            throw translate(e, "publishing metadata '" + label + "' of agent '" + agent + "'");
        }
    }

    /** Offers {@code blob} under {@code label} (never {@link Agent#FULL}, which {@link #offerFull} serves). */
    void offer(String label, byte[] blob) {
        engine.offerBlob(offerLabel(label), () -> blob);
        offered.add(label);
    }

    boolean anyPublished() {
        return !published.isEmpty();
    }

    /** Removes everything published in the stores and withdraws the partial offers. */
    void withdraw() {
        for (String label : List.copyOf(published)) {
            try {
                namespace().delete(storeKey(agent, label));
                published.remove(label);
            } catch (TransferException e) {
                throw translate(e, "removing metadata '" + label + "' of agent '" + agent + "'");
            }
        }
        for (String label : List.copyOf(offered)) {
            engine.offerBlob(offerLabel(label), null);
            offered.remove(label);
        }
    }

    // ---------------------------------------------------------------- peers'

    /** See {@link Agent#loadRemoteMD}. */
    String load(byte[] blob) {
        AgentMetadata md = AgentMetadata.decode(blob);
        if (md.agent().equals(agent)) {
            throw new NixlException(NixlStatus.INVALID_PARAM, "agent '" + agent + "' was given its own metadata to load");
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
                log.info("agent '{}': metadata of '{}' generation {} is older than the loaded {}; ignored", agent, md.agent(),
                        md.generation(), peer.generation);
                return;
            }
            for (AgentMetadata.Section sec : md.sections()) {
                AgentBackends.Slot s = backends.find(sec.backend());
                if (s == null) {
                    log.debug("agent '{}': metadata of '{}' has a section for backend '{}', which this agent lacks; skipped", agent,
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

    /** See {@link Agent#invalidateRemoteMD}. */
    void invalidate(String peerName) {
        Peer p = peers.remove(peerName);
        if (p == null) {
            throw new NixlException(NixlStatus.NOT_FOUND, "agent '" + agent + "' has no metadata of '" + peerName + "'");
        }
        for (AgentBackends.Slot s : backends.slots()) {
            s.backend().unloadRemote(peerName);
        }
    }

    /** See {@link Agent#checkRemoteMD}. */
    boolean check(String peerName, DescriptorList descriptors) {
        Peer p = peers.get(peerName);
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

    /** A peer whose metadata is loaded, or null. */
    Peer peer(String peerName) {
        return peers.get(peerName);
    }

    /** See {@link Agent#fetchRemoteMD(String, String, Duration)}. */
    String fetchStored(String peerName, String label, Duration timeout) {
        byte[] blob;
        try {
            blob = namespace().await(storeKey(peerName, label), timeout);
        } catch (TransferException e) {
            throw translate(e, "fetching metadata '" + label + "' of agent '" + peerName + "'");
        }
        String got = load(blob);
        if (!got.equals(peerName)) {
            invalidate(got);
            throw new NixlException(NixlStatus.MISMATCH, "metadata stored for agent '" + peerName + "' names agent '" + got + "'");
        }
        return got;
    }

    /** See {@link Agent#fetchRemoteMD(String, int, String, Duration)}. */
    String fetchDirect(String host, int port, String label, Duration timeout) {
        byte[] blob;
        try {
            blob = engine.fetchBlob(host, port, offerLabel(label), timeout);
        } catch (TransferException e) {
            throw translate(e, "fetching metadata '" + label + "' from " + host + ":" + port);
        }
        return load(blob);
    }

    // ---------------------------------------------------------------- names and errors

    private MetadataNamespace namespace() {
        try {
            return engine.metadataNamespace(namespace);
        } catch (TransferException e) {
            throw translate(e, "metadata store of agent '" + agent + "'");
        }
    }

    private static String storeKey(String agent, String label) {
        return agent + "/" + label;
    }

    private static String offerLabel(String label) {
        return "nixl-" + label;
    }

    static void checkLabel(String label) {
        if (label == null || !NAME.matcher(label).matches()) {
            throw new NixlException(NixlStatus.INVALID_PARAM, "metadata label '" + label + "' must be 1 to 48 characters of [A-Za-z0-9._-]");
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
}
