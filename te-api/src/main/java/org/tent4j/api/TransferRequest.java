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

    public TransferRequest {
        Objects.requireNonNull(opcode, "opcode");
        Objects.requireNonNull(local, "local");
        Objects.requireNonNull(target, "target");
        Objects.requireNonNull(priority, "priority");
        Objects.requireNonNull(transportMode, "transportMode");
    }

    /** A READ of {@code local.byteSize()} bytes from {@code targetOffset} into {@code local}. */
    public static TransferRequest read(MemorySegment local, SegmentHandle target, long targetOffset) {
        return builder(Opcode.READ, local, target, targetOffset).build();
    }

    /** A WRITE of {@code local.byteSize()} bytes from {@code local} to {@code targetOffset}. */
    public static TransferRequest write(MemorySegment local, SegmentHandle target, long targetOffset) {
        return builder(Opcode.WRITE, local, target, targetOffset).build();
    }

    public static Builder builder(Opcode opcode, MemorySegment local, SegmentHandle target, long targetOffset) {
        return new Builder(opcode, local, target, targetOffset);
    }

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

        public Builder length(long length) {
            this.length = length;
            return this;
        }

        public Builder priority(Priority priority) {
            this.priority = priority;
            return this;
        }

        /** Try this transport first, fall back to others if it cannot carry the request. */
        public Builder prefer(String transportId) {
            this.transport = transportId;
            this.mode = TransportMode.PREFER;
            return this;
        }

        /** Use only this transport; fail with {@link ErrorCode#NO_TRANSPORT} if it cannot carry the request. */
        public Builder require(String transportId) {
            this.transport = transportId;
            this.mode = TransportMode.REQUIRE;
            return this;
        }

        /** Uses the configured policy of this name instead of the first rule that matches. */
        public Builder policy(String policyName) {
            this.policy = policyName;
            return this;
        }

        public Builder deadlineNanos(long deadlineNanos) {
            this.deadlineNanos = deadlineNanos;
            return this;
        }

        /** Sets the deadline to now + {@code timeout}; the task ends as TIMEOUT if it has not completed by then. */
        public Builder timeout(Duration timeout) {
            this.deadlineNanos = System.nanoTime() + timeout.toNanos();
            return this;
        }

        public TransferRequest build() {
            return new TransferRequest(opcode, local, target, targetOffset, length, priority, transport, mode, policy, deadlineNanos);
        }
    }
}
