package org.tent4j.spi;

import java.util.List;
import java.util.Map;

import org.tent4j.api.BufferInfo;
import org.tent4j.api.SegmentInfo;

/**
 * What an engine publishes about itself so peers can reach its memory.
 *
 * <p>Build one with {@link #builder()}. The canonical constructor is not part of the contract: a component added in a
 * later version changes it, while the builder only gains a setter (BoundariesTest keeps every module on the builder).
 *
 * @param name                segment name
 * @param machineId           equal on engines of one machine (boot id and machine id); gates same-host transports
 * @param host                host peers connect to
 * @param controlPort         port of the engine's control plane (descriptor exchange, notifications)
 * @param transports          transport ids the engine runs
 * @param transportAttributes per transport id, what it published for the whole segment (e.g. tcp's data port)
 * @param buffers             registered buffers peers may address
 * @param version             increases every time the owner republishes
 * @param pid                 process id of the owning engine's JVM (0: not published, an older engine)
 * @param instanceId          random per engine start: a restarted engine with the same name, host and even pid is
 *                            told apart from the one before it ("" when not published)
 */
public record SegmentDescriptor(String name, String machineId, String host, int controlPort, List<String> transports,
                                Map<String, Map<String, String>> transportAttributes, List<BufferDescriptor> buffers,
                                long version, long pid, String instanceId) {
    /** Copies the lists and maps, so the record is immutable; a {@code null} instance id becomes "". */
    public SegmentDescriptor {
        transports = List.copyOf(transports);
        transportAttributes = Map.copyOf(transportAttributes);
        buffers = List.copyOf(buffers);
        instanceId = instanceId == null ? "" : instanceId;
    }

    /**
     * A descriptor without process identity (harnesses, tests, older peers).
     *
     * @param name                segment name
     * @param machineId           equal on engines of one machine
     * @param host                host peers connect to
     * @param controlPort         port of the engine's control plane
     * @param transports          transport ids the engine runs
     * @param transportAttributes per transport id, what it published for the whole segment
     * @param buffers             registered buffers peers may address
     * @param version             increases every time the owner republishes
     */
    public SegmentDescriptor(String name, String machineId, String host, int controlPort, List<String> transports,
                             Map<String, Map<String, String>> transportAttributes, List<BufferDescriptor> buffers,
                             long version) {
        this(name, machineId, host, controlPort, transports, transportAttributes, buffers, version, 0, "");
    }

    /**
     * Whether both descriptors come from one process (same machine and pid); false when either does not say.
     *
     * @param other another descriptor
     * @return {@code true} only when both publish the same non-zero pid on the same machine
     */
    public boolean sameProcessAs(SegmentDescriptor other) {
        return pid != 0 && pid == other.pid && machineId.equals(other.machineId);
    }

    /**
     * Whether both come from one start of one engine: same process and same instance id.
     *
     * @param other another descriptor
     * @return {@code false} when either publishes no instance id
     */
    public boolean sameInstanceAs(SegmentDescriptor other) {
        return sameProcessAs(other) && !instanceId.isEmpty() && instanceId.equals(other.instanceId);
    }

    /**
     * What one transport published for the whole segment.
     *
     * @param transportId the transport's id
     * @return its attributes, empty if it published none; hostile until checked
     */
    public Map<String, String> transportAttributes(String transportId) {
        return transportAttributes.getOrDefault(transportId, Map.of());
    }

    /**
     * The buffer holding {@code [address, address + length)}, or {@code null}.
     *
     * @param address start in the owner's address space
     * @param length  bytes
     * @return the one buffer holding the whole range, or {@code null} when none does
     */
    public BufferDescriptor findBuffer(long address, long length) {
        for (BufferDescriptor b : buffers) {
            if (b.contains(address, length)) {
                return b;
            }
        }
        return null;
    }

    /**
     * A builder with nothing set; {@link Builder#build()} needs at least a name.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * A builder holding this descriptor's values, to change some of them.
     *
     * @return a new builder
     */
    public Builder toBuilder() {
        return new Builder().name(name).machineId(machineId).host(host).controlPort(controlPort).transports(transports)
                .transportAttributes(transportAttributes).buffers(buffers).version(version).pid(pid).instanceId(instanceId);
    }

    /**
     * The API's view of this descriptor.
     *
     * @return name, host, machine id, transports and buffers, without attributes
     */
    public SegmentInfo info() {
        return new SegmentInfo(name, host, machineId, transports, buffers.stream().map(BufferDescriptor::info).toList());
    }

    /**
     * The API's view of the buffers.
     *
     * @return one {@link BufferInfo} per buffer, in order
     */
    public List<BufferInfo> bufferInfos() {
        return buffers.stream().map(BufferDescriptor::info).toList();
    }

    /** Builds a {@link SegmentDescriptor}; unset lists and maps are empty, numbers 0, the instance id "". */
    public static final class Builder {
        private String name;
        private String machineId = "";
        private String host = "";
        private int controlPort;
        private List<String> transports = List.of();
        private Map<String, Map<String, String>> transportAttributes = Map.of();
        private List<BufferDescriptor> buffers = List.of();
        private long version;
        private long pid;
        private String instanceId = "";

        private Builder() {
        }

        /**
         * Sets {@code name}.
         *
         * @param name segment name
         * @return this builder
         */
        public Builder name(String name) {
            this.name = name;
            return this;
        }

        /**
         * Sets {@code machineId}.
         *
         * @param machineId equal on engines of one machine (boot id and machine id); gates same-host transports
         * @return this builder
         */
        public Builder machineId(String machineId) {
            this.machineId = machineId;
            return this;
        }

        /**
         * Sets {@code host}.
         *
         * @param host host peers connect to
         * @return this builder
         */
        public Builder host(String host) {
            this.host = host;
            return this;
        }

        /**
         * Sets {@code controlPort}.
         *
         * @param controlPort port of the engine's control plane (descriptor exchange, notifications)
         * @return this builder
         */
        public Builder controlPort(int controlPort) {
            this.controlPort = controlPort;
            return this;
        }

        /**
         * Sets {@code transports}.
         *
         * @param transports transport ids the engine runs
         * @return this builder
         */
        public Builder transports(List<String> transports) {
            this.transports = transports;
            return this;
        }

        /**
         * Sets {@code transportAttributes}.
         *
         * @param transportAttributes per transport id, what it published for the whole segment (e.g. tcp's data port)
         * @return this builder
         */
        public Builder transportAttributes(Map<String, Map<String, String>> transportAttributes) {
            this.transportAttributes = transportAttributes;
            return this;
        }

        /**
         * Sets {@code buffers}.
         *
         * @param buffers registered buffers peers may address
         * @return this builder
         */
        public Builder buffers(List<BufferDescriptor> buffers) {
            this.buffers = buffers;
            return this;
        }

        /**
         * Sets {@code version}.
         *
         * @param version increases every time the owner republishes
         * @return this builder
         */
        public Builder version(long version) {
            this.version = version;
            return this;
        }

        /**
         * Sets {@code pid}.
         *
         * @param pid process id of the owning engine's JVM (0: not published, an older engine)
         * @return this builder
         */
        public Builder pid(long pid) {
            this.pid = pid;
            return this;
        }

        /**
         * Sets {@code instanceId}.
         *
         * @param instanceId random per engine start: a restarted engine with the same name, host and even pid is
         *                   told apart from the one before it ("" when not published)

         * @return this builder
         */
        public Builder instanceId(String instanceId) {
            this.instanceId = instanceId;
            return this;
        }

        /**
         * The descriptor.
         *
         * @return a new immutable descriptor
         * @throws NullPointerException without a name
         */

        public SegmentDescriptor build() {
            java.util.Objects.requireNonNull(name, "name");
            return new SegmentDescriptor(name, machineId, host, controlPort, transports, transportAttributes, buffers,
                    version, pid, instanceId);
        }
    }
}
