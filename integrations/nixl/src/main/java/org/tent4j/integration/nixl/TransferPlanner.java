package org.tent4j.integration.nixl;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferException;
import org.tent4j.integration.nixl.spi.BackendProvider;
import org.tent4j.integration.nixl.spi.Span;

/**
 * Turns descriptor lists into requests: resolves each descriptor to the backends' objects for it (prepared lists),
 * chooses the backend, merges neighbours, and has the backend prepare the request.
 *
 * <p>Backend choice is deterministic: the request's preference list, then the agent's, then every other created
 * backend by provider order; the first that has the capabilities the request needs (remote or loopback,
 * notifications), takes both memory types and covers every descriptor on both sides wins. The reason is kept on the
 * request and logged once per (peer, types, order, choice).
 */
final class TransferPlanner {
    private static final Logger log = LoggerFactory.getLogger(TransferPlanner.class);

    private final String agent;
    private final AgentBackends backends;
    private final AgentMemory memory;
    private final MetadataExchange exchange;
    private final Set<ChoiceKey> loggedChoices = ConcurrentHashMap.newKeySet();

    TransferPlanner(String agent, AgentBackends backends, AgentMemory memory, MetadataExchange exchange) {
        this.agent = agent;
        this.backends = backends;
        this.memory = memory;
        this.exchange = exchange;
    }

    /** See {@link Agent#prepXferDlist}. */
    PreparedList prepare(String peer, DescriptorList descriptors) {
        boolean initiator = peer.isEmpty();
        boolean loopback = peer.equals(agent);
        Map<String, Object[]> byBackend = new LinkedHashMap<>();
        if (initiator || loopback) {
            for (AgentBackends.Slot s : backends.slots()) {
                Object[] objs = new Object[descriptors.size()];
                for (int i = 0; i < objs.length; i++) {
                    AgentMemory.Region r = memory.regionOf(descriptors.type(), descriptors.get(i));
                    objs[i] = r == null ? null : (initiator ? r.registered() : r.loopback()).get(s.id());
                }
                byBackend.put(s.id(), objs);
            }
        } else {
            MetadataExchange.Peer p = exchange.peer(peer);
            if (p == null) {
                throw new NixlException(NixlStatus.NOT_FOUND, "agent '" + agent + "' has no metadata of '" + peer + "' (load or fetch it first)");
            }
            p.regions.forEach((id, rs) -> {
                Object[] objs = new Object[descriptors.size()];
                for (int i = 0; i < objs.length; i++) {
                    for (MetadataExchange.RemoteRegion r : rs) {
                        if (r.type() == descriptors.type() && r.descriptor().covers(descriptors.get(i))) {
                            objs[i] = r.object();
                            break;
                        }
                    }
                }
                byBackend.put(id, objs);
            });
        }
        return new PreparedList(initiator ? agent : peer, initiator, descriptors, byBackend);
    }

    /** See {@link Agent#makeXferReq}: both lists checked, then built. */
    XferRequest make(Opcode op, PreparedList local, int[] localIdx, PreparedList remote, int[] remoteIdx, XferOptions options) {
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

    XferRequest build(Opcode op, PreparedList local, int[] li, PreparedList remote, int[] ri, XferOptions options, boolean merge) {
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
        boolean loopback = peer.equals(agent);
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
    private record Choice(AgentBackends.Slot slot, List<String> order, Map<String, String> skipped, String target, MemoryType from,
                          MemoryType to) {
        String reason() {
            return "backend '" + slot.id() + "' chosen for " + target + " " + from + "->" + to + " from order " + order
                    + (skipped.isEmpty() ? "" : "; skipped " + skipped);
        }
    }

    private record ChoiceKey(String peer, MemoryType from, MemoryType to, List<String> order, String chosen) {
    }

    private Choice choose(List<String> requested, boolean loopback, boolean notify, PreparedList local, int[] li, PreparedList remote, int[] ri) {
        List<String> order = backends.defaultOrder();
        if (!requested.isEmpty()) {
            List<String> o = new ArrayList<>();
            for (String id : requested) {
                backends.provider(id);
                if (backends.find(id) == null) {
                    throw new NixlException(NixlStatus.NOT_FOUND, "request prefers backend '" + id + "', which agent '" + agent + "' has not created");
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
            AgentBackends.Slot s = backends.find(id);
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
                    log.info("agent '{}': {}", agent, c.reason());
                } else if (log.isDebugEnabled()) {
                    log.debug("agent '{}': {}", agent, c.reason());
                }
                return c;
            }
            if (skipped.isEmpty()) {
                skipped = new LinkedHashMap<>();
            }
            skipped.put(id, why);
        }
        throw new NixlException(NixlStatus.NOT_FOUND, "no backend of agent '" + agent + "' can carry " + local.type() + "->" + remote.type()
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
}
