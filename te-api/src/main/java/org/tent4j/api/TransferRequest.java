package org.tent4j.api;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Objects;

/**
 * One request: move {@code length} bytes between local registered memory and a target segment.
 *
 * @param opcode        READ (target → local) or WRITE (local → target)
 * @param local         local memory; must lie inside a buffer registered with the engine. Bytes
 *                      {@code [local.address(), local.address() + length)} are used.
 * @param target        the segment to read from or write into
 * @param targetOffset  the address in the target's address space: a registered buffer's {@link BufferInfo#address()}
 *                      plus an offset; for a registered file, {@link RegisteredFile#address()} (the same value as its
 *                      {@code BufferInfo#address()}) plus the offset in the file
 * @param length        bytes to move; must be &gt; 0
 * @param priority      scheduling class
 * @param transport     transport id hint, or {@code null} to let the engine choose
 * @param transportMode whether the hint is a preference or a requirement
 * @param policy        name of a configured policy to use instead of the first matching one, or {@code null}
 * @param deadlineNanos absolute {@link System#nanoTime()} deadline, or 0 for the engine's default timeout
 */
public record TransferRequest(Opcode opcode, MemorySegment local, SegmentHandle target, long targetOffset, long length,
                              Priority priority, String transport, TransportMode transportMode, String policy,
                              long deadlineNanos) {

    /**
     * Checks that the required components are present.
     *
     * @throws NullPointerException naming the component when {@code opcode}, {@code local}, {@code target},
     *                              {@code priority} or {@code transportMode} is {@code null}
     */
    public TransferRequest {
        Objects.requireNonNull(opcode, "opcode");
        Objects.requireNonNull(local, "local");
        Objects.requireNonNull(target, "target");
        Objects.requireNonNull(priority, "priority");
        Objects.requireNonNull(transportMode, "transportMode");
    }

    /**
     * A READ of {@code local.byteSize()} bytes from {@code targetOffset} into {@code local}.
     *
     * @param local        registered local memory to fill
     * @param target       the segment to read from
     * @param targetOffset the address in the target's address space
     * @return the request, with the defaults of {@link Builder}
     */
    public static TransferRequest read(MemorySegment local, SegmentHandle target, long targetOffset) {
        return builder(Opcode.READ, local, target, targetOffset).build();
    }

    /**
     * A WRITE of {@code local.byteSize()} bytes from {@code local} to {@code targetOffset}.
     *
     * @param local        registered local memory to send
     * @param target       the segment to write into
     * @param targetOffset the address in the target's address space
     * @return the request, with the defaults of {@link Builder}
     */
    public static TransferRequest write(MemorySegment local, SegmentHandle target, long targetOffset) {
        return builder(Opcode.WRITE, local, target, targetOffset).build();
    }

    /**
     * A builder for a request with everything but the four required components defaulted.
     *
     * @param opcode       READ or WRITE
     * @param local        registered local memory; its size is the default length
     * @param target       the segment to read from or write into
     * @param targetOffset the address in the target's address space
     * @return the builder
     */
    public static Builder builder(Opcode opcode, MemorySegment local, SegmentHandle target, long targetOffset) {
        return new Builder(opcode, local, target, targetOffset);
    }

    /**
     * Builds a {@link TransferRequest}. Defaults: the length of {@code local}, {@link Priority#HIGH}, no transport
     * hint, no named policy, and the engine's {@code transfer.timeout}. Not thread-safe.
     */
    public static final class Builder {
        private final Opcode opcode;
        private final MemorySegment local;
        private final SegmentHandle target;
        private final long targetOffset;
        private long length;
        private Priority priority = Priority.HIGH;
        private String transport;
        private TransportMode mode = TransportMode.PREFER;
        private String policy;
        private long deadlineNanos;

        private Builder(Opcode opcode, MemorySegment local, SegmentHandle target, long targetOffset) {
            this.opcode = opcode;
            this.local = local;
            this.target = target;
            this.targetOffset = targetOffset;
            this.length = local.byteSize();
        }

        /**
         * Bytes to move, instead of the whole of {@code local}.
         *
         * @param length bytes, &gt; 0 (checked at submit)
         * @return this builder
         */
        public Builder length(long length) {
            this.length = length;
            return this;
        }

        /**
         * The scheduling class.
         *
         * @param priority the class
         * @return this builder
         */
        public Builder priority(Priority priority) {
            this.priority = priority;
            return this;
        }

        /**
         * Try this transport first, fall back to others if it cannot carry the request.
         *
         * @param transportId a transport's id, e.g. {@code tcp}
         * @return this builder
         */
        public Builder prefer(String transportId) {
            this.transport = transportId;
            this.mode = TransportMode.PREFER;
            return this;
        }

        /**
         * Use only this transport; fail with {@link ErrorCode#NO_TRANSPORT} if it cannot carry the request.
         *
         * @param transportId a transport's id, e.g. {@code rdma}
         * @return this builder
         */
        public Builder require(String transportId) {
            this.transport = transportId;
            this.mode = TransportMode.REQUIRE;
            return this;
        }

        /**
         * Uses the configured policy of this name instead of the first rule that matches.
         *
         * @param policyName a policy configured on the engine
         * @return this builder
         */
        public Builder policy(String policyName) {
            this.policy = policyName;
            return this;
        }

        /**
         * An absolute deadline; the task ends as TIMEOUT if it has not completed by then.
         *
         * @param deadlineNanos a {@link System#nanoTime()} value, or 0 for the engine's default timeout
         * @return this builder
         */
        public Builder deadlineNanos(long deadlineNanos) {
            this.deadlineNanos = deadlineNanos;
            return this;
        }

        /**
         * Sets the deadline to now + {@code timeout}; the task ends as TIMEOUT if it has not completed by then.
         *
         * @param timeout from now
         * @return this builder
         */
        public Builder timeout(Duration timeout) {
            this.deadlineNanos = System.nanoTime() + timeout.toNanos();
            return this;
        }

        /**
         * The request.
         *
         * @return a new request with this builder's values
         */
        public TransferRequest build() {

            return new TransferRequest(opcode, local, target, targetOffset, length, priority, transport, mode, policy, deadlineNanos);
        }
    }
}
