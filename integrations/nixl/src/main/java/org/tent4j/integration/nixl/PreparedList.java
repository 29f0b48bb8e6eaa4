package org.tent4j.integration.nixl;

import java.util.Map;

/**
 * A descriptor list resolved once against one side's registrations: per backend, the backend's region object of each
 * descriptor ({@code null} where that backend does not cover it). Requests are then built by index from two prepared
 * lists without looking anything up again. Made by {@link Agent#prepXferDlist}.
 */
public final class PreparedList {
    final String agent;
    final boolean initiator;
    final DescriptorList descriptors;
    final Map<String, Object[]> regions;
    volatile boolean released;

    PreparedList(String agent, boolean initiator, DescriptorList descriptors, Map<String, Object[]> regions) {
        this.agent = agent;
        this.initiator = initiator;
        this.descriptors = descriptors;
        this.regions = regions;
    }

    /** The agent whose memory this list describes ({@code ""} for this agent as initiator). */
    public String agent() {
        return initiator ? "" : agent;
    }

    public int size() {
        return descriptors.size();
    }

    public MemoryType type() {
        return descriptors.type();
    }

    /** Lets go of the list; requests already made from it stay valid. */
    public void release() {
        released = true;
    }
}
