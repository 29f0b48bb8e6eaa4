package org.tent4j.integration.nixl;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** An agent's memory registrations, each held by the backends that accepted it, and their generation. */
final class AgentMemory {
    private static final Logger log = LoggerFactory.getLogger(AgentMemory.class);

    /** One registered region: each accepting backend's object for it and, for loopback, its target view. */
    record Region(MemoryType type, Descriptor descriptor, Map<String, Object> registered, Map<String, Object> loopback) {
    }

    private final String agent;
    private final AgentBackends backends;
    private final List<Region> regions = new CopyOnWriteArrayList<>();
    private final AtomicLong generation = new AtomicLong();

    AgentMemory(String agent, AgentBackends backends) {
        this.agent = agent;
        this.backends = backends;
    }

    /** See {@link Agent#registerMem(DescriptorList, List)}. */
    void register(DescriptorList descriptors, List<String> backendIds) {
        List<AgentBackends.Slot> chosen = new ArrayList<>();
        for (AgentBackends.Slot s : backendIds.isEmpty() ? backends.slots() : backendIds.stream().map(backends::slot).toList()) {
            if (s.provider().memoryTypes().contains(descriptors.type())) {
                chosen.add(s);
            }
        }
        if (chosen.isEmpty()) {
            throw new NixlException(NixlStatus.NOT_FOUND, "no created backend of agent '" + agent + "' takes " + descriptors.type()
                    + " memory (created: " + backends.ids() + ")");
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
            for (AgentBackends.Slot s : chosen) {
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
                log.info("agent '{}': {} {} registered with {} only ({})", agent, descriptors.type(), d, done.keySet(), refusals);
            }
            regions.add(new Region(descriptors.type(), d, done, loop));
        }
        generation.incrementAndGet();
    }

    /** See {@link Agent#deregisterMem}. */
    void deregister(DescriptorList descriptors) {
        for (Descriptor d : descriptors.descriptors()) {
            Region r = regions.stream().filter(x -> x.type() == descriptors.type() && x.descriptor().equals(d)).findFirst()
                    .orElseThrow(() -> new NixlException(NixlStatus.NOT_FOUND, descriptors.type() + " " + d
                            + " is not a registration of agent '" + agent + "' (deregister exactly what was registered)"));
            regions.remove(r);
            r.registered().forEach((id, md) -> {
                AgentBackends.Slot s = backends.find(id);
                if (s != null) {
                    s.backend().deregister(md);
                }
            });
        }
        generation.incrementAndGet();
    }

    /** The registration that covers {@code d}, or null. */
    Region regionOf(MemoryType type, Descriptor d) {
        for (Region r : regions) {
            if (r.type() == type && r.descriptor().covers(d)) {
                return r;
            }
        }
        return null;
    }

    List<Region> regions() {
        return regions;
    }

    /** Counts registration changes, so peers ignore full metadata older than what they loaded. */
    long generation() {
        return generation.get();
    }
}
