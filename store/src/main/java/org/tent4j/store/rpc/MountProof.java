package org.tent4j.store.rpc;

import java.security.MessageDigest;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferStatus;
import org.tent4j.store.PrintableId;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;

/**
 * Proof that a client mounting a segment can write the memory it names: the master hands it a nonce
 * ({@code MountChallenge}), the client writes it at the segment's base, and before the mount is applied the master
 * reads those bytes back from the named engine segment through an engine of its own. A client naming another
 * engine's memory (so that honest puts would land there) cannot place the nonce, and its mount is refused
 * {@code PERMISSION_DENIED} before anything is mounted. The engine is asked for at the first check only (a master
 * nobody mounts memory on runs none); without one the master checks nothing (and hands out empty nonces). Disk
 * segments are not checked: only their owner's own memory objects are offloaded to them, from memory this proof
 * covered.
 */
final class MountProof {
    static final int NONCE_BYTES = 32;
    /**
     * How long the read-back may take (the engine ends the task then); the mount runs on the slow-work pool, so this
     * holds one of its threads.
     */
    private static final Duration READ_TIMEOUT = Duration.ofSeconds(5);
    /**
     * How long to wait for the engine to report the read: it reports a task only once no transport still holds it, so
     * its buffer may be freed then; past this (the engine did not end it) the buffer is left registered, never freed
     * under a transfer that may still write it.
     */
    private static final long REPORT_WAIT_SECONDS = 60;

    private final Supplier<TransferEngine> engines;
    private final ClientCredentials credentials;

    /** {@code engines} null: no proof asked; else it gives the engine each check reads through. */
    MountProof(Supplier<TransferEngine> engines, ClientCredentials credentials) {
        this.engines = engines;
        this.credentials = credentials;
    }

    /** The nonce {@code clientId} must write at {@code segment}'s base; empty when mounts are not checked. */
    byte[] challenge(String clientId, SegmentSpec segment) {
        if (engines == null || segment.tier() == org.tent4j.store.Tier.DISK) {
            return new byte[0];
        }
        if (segment.size() < NONCE_BYTES) {
            throw new StoreException(StoreError.INVALID_PARAMS, "segment " + PrintableId.forLog(segment.id()) + " of "
                    + segment.size() + " bytes is smaller than the mount proof's " + NONCE_BYTES + " bytes");
        }
        return credentials.mountNonce(clientId, segment);
    }

    /** Refuses the mount unless the segment's first bytes, read through this master's engine, are the nonce. */
    void check(String clientId, SegmentSpec segment) {
        if (engines == null || segment.tier() == org.tent4j.store.Tier.DISK) {
            return;
        }
        byte[] expected = challenge(clientId, segment);
        String what = "mount of segment " + PrintableId.forLog(segment.id()) + " (engine segment "
                + PrintableId.forLog(segment.engineSegment()) + ", address " + segment.base() + ")";
        TransferEngine engine;
        try {
            engine = engines.get();
        } catch (RuntimeException e) {
            throw new StoreException(StoreError.UNAVAILABLE_IN_CURRENT_STATUS, what + ": the master's engine for mount "
                    + "proofs is not available: " + e.getMessage());
        }
        RegisteredMemory buf = engine.allocate(NONCE_BYTES, Location.CPU, Permission.LOCAL_ONLY);
        SegmentHandle target = null;
        boolean leaked = false;
        try {
            target = engine.openSegment(segment.engineSegment());
            TransferStatus st = engine.submit(TransferRequest.builder(Opcode.READ, buf.segment(), target, segment.base())
                    .timeout(READ_TIMEOUT).build()).get(REPORT_WAIT_SECONDS, TimeUnit.SECONDS);
            if (!st.isCompleted()) {
                throw refused(what + ": the master could not read the mount proof back (" + st.error() + ": "
                        + st.message() + ")");
            }
            byte[] got = buf.segment().asSlice(0, NONCE_BYTES).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
            if (!MessageDigest.isEqual(expected, got)) {
                throw refused(what + ": the bytes at its base are not the nonce MountChallenge gave this client, so it "
                        + "has not shown it can write that memory");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw refused(what + ": interrupted while reading the mount proof");
        } catch (TimeoutException e) {
            leaked = true;
            throw refused(what + ": the master's engine did not end the mount proof's read within "
                    + REPORT_WAIT_SECONDS + " s");
        } catch (ExecutionException e) {
            throw refused(what + ": the master could not read the mount proof back: " + e);
        } catch (RuntimeException e) {
            if (e instanceof StoreException se) {
                throw se;
            }
            throw refused(what + ": the master could not read the mount proof back: " + e.getMessage());
        } finally {
            if (target != null) {
                try {
                    engine.closeSegment(target);
                } catch (RuntimeException ignored) {
                    // the read is over; a segment that will not close changes nothing here
                }
            }
            if (!leaked) {
                engine.unregister(buf);
            }
        }
    }

    private static StoreException refused(String why) {
        return new StoreException(StoreError.PERMISSION_DENIED, why);
    }
}
