package org.tent4j.store.rpc;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.UUID;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;

/**
 * Issues client ids with their session credentials and checks them. A credential is
 * {@code HMAC-SHA256(key, "client\0" + client id)} under a key only the master holds, so checking one needs no table: issuing
 * changes no state (no command, nothing to replay or snapshot), a client keeps its id across its own expiry and
 * remount as before, and nobody without the key can make the credential of an id it did not get.
 *
 * <p>In memory the key is random per process (a restarted master's state is empty, and its clients register again).
 * A durable master takes its group's key from the replicated state ({@link org.tent4j.store.master.DurableLog#credentialKey}):
 * the first leader proposes one, every master applies the same, and snapshots carry it, so a restart, a failover to
 * another master and a master that caught up from a snapshot all recognize the clients the log knows, with the
 * credentials they hold.
 */
public final class ClientCredentials {
    private static final int KEY_BYTES = 32;
    /** How long issuing waits for a new group's first key entry to be applied. */
    private static final long KEY_WAIT_MILLIS = 10_000;

    private final CompletableFuture<byte[]> key;
    private final ThreadLocal<Mac> macs;

    private ClientCredentials(CompletableFuture<byte[]> key) {
        this.key = key;
        this.macs = ThreadLocal.withInitial(() -> {
            try {
                Mac m = Mac.getInstance("HmacSHA256");
                m.init(new SecretKeySpec(key.join(), "HmacSHA256"));
                return m;
            } catch (GeneralSecurityException e) {
                throw new IllegalStateException("HmacSHA256 is unavailable", e);
            }
        });
    }

    /** A fresh random key: credentials live as long as this process. */
    public static ClientCredentials random() {
        byte[] k = new byte[KEY_BYTES];
        new SecureRandom().nextBytes(k);
        return new ClientCredentials(CompletableFuture.completedFuture(k));
    }

    /** The credentials {@code master} issues from: its group's key when durable, else a random one. */
    public static ClientCredentials of(org.tent4j.store.master.StoreMaster master) {
        return master.durable() ? new ClientCredentials(master.log().credentialKey()) : random();
    }

    /** A new client id (a random UUID) and its credential. */
    public Issued issue() {
        awaitKey();
        String id = UUID.randomUUID().toString();
        return new Issued(id, credential(id));
    }

    /** Whether {@code credentialHex} is the credential of {@code clientId} (constant-time compare). */
    boolean verify(String clientId, String credentialHex) {
        if (!key.isDone()) {
            // a new group before its first key entry is applied has issued nothing
            return false;
        }
        byte[] presented;
        try {
            presented = HexFormat.of().parseHex(credentialHex);
        } catch (IllegalArgumentException notHex) {
            return false;
        }
        return MessageDigest.isEqual(credential(clientId), presented);
    }

    /**
     * The nonce a client must write at the base of {@code segment} before mounting it: a MAC of the client and the
     * whole spec, so it needs no table, and nobody else can tell what to write there. Its message starts
     * {@code mount\0} and a credential's {@code client\0}, so a nonce is never a credential.
     */
    byte[] mountNonce(String clientId, org.tent4j.store.SegmentSpec segment) {
        awaitKey();
        return macs.get().doFinal(("mount\0" + clientId + "\0" + segment.id() + "\0" + segment.engineSegment() + "\0"
                + segment.host() + "\0" + segment.base() + "\0" + segment.size()).getBytes(StandardCharsets.UTF_8));
    }

    private void awaitKey() {
        try {
            key.get(KEY_WAIT_MILLIS, TimeUnit.MILLISECONDS);
        } catch (TimeoutException | ExecutionException e) {
            throw new StoreException(StoreError.UNAVAILABLE_IN_CURRENT_STATUS, "the master's group has no client-"
                    + "credential key applied yet (its leader proposes one when elected); try again");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StoreException(StoreError.UNAVAILABLE_IN_CURRENT_STATUS, "interrupted waiting for the key");
        }
    }

    private byte[] credential(String clientId) {
        // domain-separated from mount nonces ("mount\0..."), whatever an id a caller presents holds
        return macs.get().doFinal(("client\0" + clientId).getBytes(StandardCharsets.UTF_8));
    }

    /** A registration's answer; the credential is a secret, never printed. */
    public record Issued(String clientId, byte[] credential) {
        @Override
        public String toString() {
            return "Issued[" + clientId + "]";
        }
    }
}
