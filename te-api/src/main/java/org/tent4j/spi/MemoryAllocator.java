package org.tent4j.spi;

import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.Objects;

import org.tent4j.api.Location;

/**
 * Provided by a transport that needs memory allocated its own way (shared memory, device IPC memory). The runtime
 * asks the transports' allocators in preference order on the application thread inside
 * {@link org.tent4j.api.TransferEngine#allocate}; the first that {@link #supports} the location allocates.
 */
public interface MemoryAllocator {

    /**
     * Whether this allocator can allocate at {@code location}. Must be cheap and must not block.
     *
     * @param location where the application wants the memory; may be {@link Location#ANY}
     * @return whether {@link #allocate} would serve it
     */
    boolean supports(Location location);

    /**
     * Allocates zeroed memory; {@link Allocation#backing()} is attached to the registration as
     * {@link LocalBuffer#backing()}. If the registration
 that follows fails, the runtime runs {@link Allocation#release()} at once; the application's
     * {@code allocate} then fails with that registration's error. A throw here fails the application's
     * {@code allocate} as it is (no other allocator is asked).
     *
     * @param size     bytes, &gt; 0 (checked by the runtime)
     * @param location where to allocate it; one {@link #supports} accepted
     * @return the memory and how to free it; the engine owns it from here on
     * @throws org.tent4j.api.TransferException naming the size and location when it cannot be allocated
     */
    Allocation allocate(long size, Location location);

    /**
     * Memory made by an allocator, built with {@link #builder(MemorySegment, Runnable)} so that a field added later
     * breaks no allocator. (This was a record; its public constructor and accessors stay for plugins compiled against
     * that shape.)
     */
    final class Allocation {
        private final MemorySegment segment;
        private final Map<String, String> backing;
        private final Runnable release;

        /**
         * The record's canonical constructor, kept for old plugins.
         *
         * @param segment the memory
         * @param backing how it is backed, for peers (e.g. {@code path})
         * @param release frees it; called once when it is unregistered
         * @deprecated positional construction breaks every allocator when a field is added; use
         *             {@link #builder(MemorySegment, Runnable)}. Kept so plugins compiled against te-api 0.1 still link.
         */
        @Deprecated(since = "0.2")
        public Allocation(MemorySegment segment, Map<String, String> backing, Runnable release) {
            this.segment = segment;
            this.backing = Map.copyOf(backing);
            this.release = release;
        }

        /**
         * An allocation of {@code segment}, freed by {@code release}; backing empty unless set.
         *
         * @param segment the memory, alive until {@code release} runs
         * @param release frees it; run once, on the thread that unregisters it or closes the engine
         * @return a builder
         */
        public static Builder builder(MemorySegment segment, Runnable release) {
            return new Builder(segment, release);
        }

        /**
         * The memory.
         *
         * @return the segment
         */
        public MemorySegment segment() {
            return segment;
        }

        /**
         * How it is backed, for peers (e.g. {@code path}); empty for plain memory.
         *
         * @return published attributes; peers treat them as hostile
         */
        public Map<String, String> backing() {
            return backing;
        }

        /**
         * Frees it; called once when it is unregistered.
         *
         * @return the release action
         */
        public Runnable release() {
            return release;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Allocation a && segment.equals(a.segment) && backing.equals(a.backing)
                    && release.equals(a.release);
        }

        @Override
        public int hashCode() {
            return Objects.hash(segment, backing, release);
        }

        @Override
        public String toString() {
            return "Allocation[segment=" + segment + ", backing=" + backing + "]";
        }

        /** Builds an {@link Allocation}. */
        public static final class Builder {
            private final MemorySegment segment;
            private final Runnable release;
            private Map<String, String> backing = Map.of();

            private Builder(MemorySegment segment, Runnable release) {
                this.segment = Objects.requireNonNull(segment, "segment");
                this.release = Objects.requireNonNull(release, "release");
            }

            /**
             * How the memory is backed, published to peers with the registration (e.g. {@code path}, {@code size}).
             *
             * @param backing attribute name to value; copied
             * @return this builder
             */
            public Builder backing(Map<String, String> backing) {
                this.backing = Map.copyOf(backing);
                return this;
            }

            /**
             * The allocation.
             *
             * @return a new immutable allocation
             */
            @SuppressWarnings("deprecation")
            public Allocation build() {

                return new Allocation(segment, backing, release);
            }
        }
    }
}
