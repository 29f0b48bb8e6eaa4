package org.tent4j.spi;

import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.Objects;
import java.util.Set;

import org.tent4j.api.MemoryKind;

/**
 * What a transport declares it can do; the runtime selects from these and never guesses.
 *
 * <p>Built with {@link #builder()}, never positionally: a field added later gets a default in the builder, so a plugin
 * built against an older te-api keeps compiling and linking. (This was a record; its public constructor and accessors
 * stay for plugins compiled against that shape.)
 *
 * <pre>{@code
 * TransportCapabilities.builder()
 *         .memoryPath(MemoryKind.CPU, MemoryKind.CPU)
 *         .maxSliceSize(64 << 20)
 *         .rank(50)
 *         .build();
 * }</pre>
 */
public final class TransportCapabilities {
    /** Rank of a transport that declares none: after every transport of this project, before the test fault injector. */
    public static final int DEFAULT_RANK = 500;

    private static final int KINDS = MemoryKind.values().length;
    private final Set<MemoryPath> memoryPaths;
    /** {@link #memoryPaths} as bits (local ordinal × kinds + remote ordinal): {@link #supports} is asked per request. */
    private final long pathBits;
    private final boolean sameHostOnly;
    private final boolean cancellation;
    private final long maxSliceSize;
    private final int rank;
    private final boolean concurrentPosts;

    /**
     * The record's canonical constructor, kept for old plugins.
     *
     * @param memoryPaths  local→remote memory-kind pairs it can move between
     * @param sameHostOnly whether both engines must be on one machine
     * @param cancellation whether {@link PeerConnection#cancel} can stop a posted slice
     * @param maxSliceSize largest slice it accepts, &gt; 0
     * @param rank         default order among transports, lower first
     * @throws IllegalArgumentException when {@code maxSliceSize} is not positive
     * @deprecated positional construction breaks every plugin when a field is added; use {@link #builder()}. Kept so
     *             plugins compiled against te-api 0.1 (where this type was a record) still link.
     */
    @Deprecated(since = "0.2")
    public TransportCapabilities(Set<MemoryPath> memoryPaths, boolean sameHostOnly, boolean cancellation,
                                 long maxSliceSize, int rank) {
        this(memoryPaths, sameHostOnly, cancellation, maxSliceSize, rank, false);
    }

    private TransportCapabilities(Set<MemoryPath> memoryPaths, boolean sameHostOnly, boolean cancellation,
                                  long maxSliceSize, int rank, boolean concurrentPosts) {
        this.concurrentPosts = concurrentPosts;
        this.memoryPaths = Set.copyOf(memoryPaths);
        long bits = 0;
        for (MemoryPath p : this.memoryPaths) {
            bits |= pathBit(p.local(), p.remote());
        }
        this.pathBits = bits;
        if (maxSliceSize <= 0) {
            throw new IllegalArgumentException("maxSliceSize must be > 0, got " + maxSliceSize);
        }
        this.sameHostOnly = sameHostOnly;
        this.cancellation = cancellation;
        this.maxSliceSize = maxSliceSize;
        this.rank = rank;
    }

    /**
     * A builder with the defaults: host memory to host memory only, not same-host only, no cancellation, no slice
     * limit of its own ({@link Long#MAX_VALUE}), rank {@link #DEFAULT_RANK}.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * A builder holding these capabilities, to derive others (e.g. an instance that also declares device memory).
     *
     * @return a new builder; changing it leaves this object as it is
     */
    public Builder toBuilder() {
        return new Builder().memoryPaths(memoryPaths).sameHostOnly(sameHostOnly).cancellation(cancellation)
                .maxSliceSize(maxSliceSize).rank(rank).concurrentPosts(concurrentPosts);
    }

    /**
     * Host memory to host memory only.
     *
     * @return the one pair cpu→cpu
     */
    public static Set<MemoryPath> hostOnly() {
        return Set.of(MemoryPath.of(MemoryKind.CPU, MemoryKind.CPU));
    }

    /**
     * Local→remote memory-kind pairs it can move between.
     *
     * @return an unmodifiable set
     */
    public Set<MemoryPath> memoryPaths() {
        return memoryPaths;
    }

    /**
     * Whether both engines must be on one machine (equal machine ids).
     *
     * @return {@code true} for same-host transports such as shm and nvlink
     */
    public boolean sameHostOnly() {
        return sameHostOnly;
    }

    /**
     * Whether {@link PeerConnection#cancel} can stop a posted slice; only then does the runtime call it.
     *
     * @return the flag
     */
    public boolean cancellation() {
        return cancellation;
    }

    /**
     * Largest slice it accepts; the runtime never hands it a bigger one.
     *
     * @return bytes, &gt; 0
     */
    public long maxSliceSize() {
        return maxSliceSize;
    }

    /**
     * Default order among transports, lower first (used when no preference is configured).
     *
     * @return the rank
     */
    public int rank() {
        return rank;
    }

    /**
     * Whether {@link PeerConnection#post} may be called from several threads at once. Then a submitting thread may
     * post its own slice when nothing waits before it; otherwise one thread at a time posts for a peer. Default false.
     *
     * @return the flag
     */
    public boolean concurrentPosts() {
        return concurrentPosts;
    }

    /**
     * Whether it can move between these two kinds of memory; asked per request, so it allocates nothing.
     *
     * @param local  the kind of the request's local memory
     * @param remote the kind of the target buffer's memory
     * @return whether the pair is among {@link #memoryPaths()}
     */
    public boolean supports(MemoryKind local, MemoryKind remote) {
        return (pathBits & pathBit(local, remote)) != 0;
    }

    private static long pathBit(MemoryKind local, MemoryKind remote) {
        return 1L << (local.ordinal() * KINDS + remote.ordinal());
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TransportCapabilities c && memoryPaths.equals(c.memoryPaths) && sameHostOnly == c.sameHostOnly
                && cancellation == c.cancellation && maxSliceSize == c.maxSliceSize && rank == c.rank
                && concurrentPosts == c.concurrentPosts;
    }

    @Override
    public int hashCode() {
        return Objects.hash(memoryPaths, sameHostOnly, cancellation, maxSliceSize, rank, concurrentPosts);
    }

    @Override
    public String toString() {
        return "TransportCapabilities[memoryPaths=" + memoryPaths + ", sameHostOnly=" + sameHostOnly + ", cancellation="
                + cancellation + ", maxSliceSize=" + maxSliceSize + ", rank=" + rank + ", concurrentPosts=" + concurrentPosts + "]";
    }

    /** Builds {@link TransportCapabilities}; every field has a default, so a field added later breaks no plugin. */
    public static final class Builder {
        private final Set<MemoryPath> memoryPaths = new LinkedHashSet<>();
        private boolean pathsSet;
        private boolean sameHostOnly;
        private boolean cancellation;
        private long maxSliceSize = Long.MAX_VALUE;
        private int rank = DEFAULT_RANK;
        private boolean concurrentPosts;

        private Builder() {
        }

        /**
         * Replaces the declared memory paths (the default is {@link #hostOnly()}); empty declares none, as a transport
         * that cannot run here may.
         *
         * @param paths the pairs; none may be {@code null}
         * @return this builder
         */
        public Builder memoryPaths(Collection<MemoryPath> paths) {
            memoryPaths.clear();
            for (MemoryPath p : paths) {
                memoryPaths.add(Objects.requireNonNull(p, "memory path"));
            }
            pathsSet = true;
            return this;
        }

        /**
         * Adds one local→remote pair to the declared memory paths (the first call replaces the default).
         *
         * @param local  the kind of local memory
         * @param remote the kind of remote memory
         * @return this builder
         */
        public Builder memoryPath(MemoryKind local, MemoryKind remote) {
            if (!pathsSet) {
                memoryPaths.clear();
                pathsSet = true;
            }
            memoryPaths.add(MemoryPath.of(Objects.requireNonNull(local, "local"), Objects.requireNonNull(remote, "remote")));
            return this;
        }

        /**
         * See {@link TransportCapabilities#sameHostOnly()}. Default false.
         *
         * @param sameHostOnly whether both engines must be on one machine
         * @return this builder
         */
        public Builder sameHostOnly(boolean sameHostOnly) {
            this.sameHostOnly = sameHostOnly;
            return this;
        }

        /**
         * See {@link TransportCapabilities#cancellation()}. Default false.
         *
         * @param cancellation whether {@link PeerConnection#cancel} can stop a posted slice
         * @return this builder
         */
        public Builder cancellation(boolean cancellation) {
            this.cancellation = cancellation;
            return this;
        }

        /**
         * See {@link TransportCapabilities#maxSliceSize()}. Default {@link Long#MAX_VALUE}.
         *
         * @param maxSliceSize bytes; must be &gt; 0, checked by {@link #build()}
         * @return this builder
         */
        public Builder maxSliceSize(long maxSliceSize) {
            this.maxSliceSize = maxSliceSize;
            return this;
        }

        /**
         * See {@link TransportCapabilities#rank()}. Default {@link TransportCapabilities#DEFAULT_RANK}.
         *
         * @param rank lower first
         * @return this builder
         */
        public Builder rank(int rank) {
            this.rank = rank;
            return this;
        }

        /**
         * See {@link TransportCapabilities#concurrentPosts()}. Default false.
         *
         * @param concurrentPosts whether {@link PeerConnection#post} may be called from several threads at once
         * @return this builder
         */
        public Builder concurrentPosts(boolean concurrentPosts) {
            this.concurrentPosts = concurrentPosts;
            return this;
        }

        /**
         * The capabilities.
         *
         * @return a new immutable object
         * @throws IllegalArgumentException when maxSliceSize is not positive
         */

        public TransportCapabilities build() {
            return new TransportCapabilities(pathsSet ? memoryPaths : hostOnly(), sameHostOnly, cancellation,
                    maxSliceSize, rank, concurrentPosts);
        }
    }
}
