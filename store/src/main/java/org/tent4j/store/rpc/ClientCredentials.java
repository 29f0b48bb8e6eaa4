package org.tent4j.store.rpc;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.UUID;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Issues client ids with their session credentials and checks them. A credential is
 * {@code HMAC-SHA256(key, "client\0" + client id)} under a key only the master holds, so checking one needs no table: issuing
 * changes no state (no command, nothing to replay or snapshot), a client keeps its id across its own expiry and
 * remount as before, and nobody without the key can make the credential of an id it did not get.
 *
 * <p>In memory the key is random per process (a restarted master's state is empty, and its clients register again).
 * A durable master keeps it in its data dir ({@link #inDir}), so a restart recognizes the clients its log knows.
 */
public final class ClientCredentials {
    /** The key's file in a durable master's data dir. */
    public static final String KEY_FILE = "client-credentials.key";
    private static final int KEY_BYTES = 32;

    private final byte[] key;
    private final ThreadLocal<Mac> macs;

    private ClientCredentials(byte[] key) {
        this.key = key.clone();
        this.macs = ThreadLocal.withInitial(() -> {
            try {
                Mac m = Mac.getInstance("HmacSHA256");
                m.init(new SecretKeySpec(this.key, "HmacSHA256"));
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
        return new ClientCredentials(k);
    }

    /**
     * The key kept in {@code dir} ({@link #KEY_FILE}, owner-only), made there on first use; a file of the wrong
     * size is refused naming it.
     */
    public static ClientCredentials inDir(Path dir) throws IOException {
        Path file = dir.resolve(KEY_FILE);
        if (!Files.exists(file)) {
            byte[] k = new byte[KEY_BYTES];
            new SecureRandom().nextBytes(k);
            Path tmp = Files.createTempFile(dir, KEY_FILE, ".tmp",
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            Files.write(tmp, k);
            try {
                Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
            } catch (FileAlreadyExistsException raced) {
                Files.deleteIfExists(tmp);
            }
        }
        byte[] k = Files.readAllBytes(file);
        if (k.length != KEY_BYTES) {
            throw new IOException(file + " is corrupt: " + k.length + " bytes, not " + KEY_BYTES);
        }
        return new ClientCredentials(k);
    }

    /** The credentials {@code master} issues from: its data dir's key when durable, else a random one. */
    public static ClientCredentials of(org.tent4j.store.master.StoreMaster master) throws IOException {
        return master.durable() ? inDir(master.log().dataDir()) : random();
    }

    /** A new client id (a random UUID) and its credential. */
    public Issued issue() {
        String id = UUID.randomUUID().toString();
        return new Issued(id, credential(id));
    }

    /** Whether {@code credentialHex} is the credential of {@code clientId} (constant-time compare). */
    boolean verify(String clientId, String credentialHex) {
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
        return macs.get().doFinal(("mount\0" + clientId + "\0" + segment.id() + "\0" + segment.engineSegment() + "\0"
                + segment.host() + "\0" + segment.base() + "\0" + segment.size()).getBytes(StandardCharsets.UTF_8));
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
