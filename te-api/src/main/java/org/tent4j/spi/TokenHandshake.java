package org.tent4j.spi;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Arrays;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Mutual challenge-response over a fresh connection, proving to each side that the other holds the shared token
 * without sending it. Both sides send {@link #hello()} ({@code "T4JA"} and a random 32-byte nonce) at once; on the
 * peer's hello each answers with {@link #proof}, {@code HMAC-SHA256(token, label, role, peer nonce, own nonce)}; on the
 * peer's proof each {@link #verify verifies} it (constant time). The role in the MAC means a proof cannot be reflected
 * back to the side that made it, and the nonces mean it cannot be replayed on another connection. Nothing may be
 * served, and nothing sent but the handshake, before the peer's proof verified.
 *
 * <p>One instance per connection; not thread-safe.
 */
public final class TokenHandshake {
    public static final int NONCE_BYTES = 32;
    public static final int HELLO_BYTES = 4 + NONCE_BYTES;
    public static final int PROOF_BYTES = 32;
    /** What a side receives before it may trust the connection: the peer's hello, then its proof. */
    public static final int PEER_BYTES = HELLO_BYTES + PROOF_BYTES;

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final byte[] LABEL = "tent4j token handshake v1".getBytes(StandardCharsets.US_ASCII);
    private static final byte INITIATOR = 'I';
    private static final byte ACCEPTOR = 'A';

    private final SecretKeySpec key;
    private final boolean initiator;
    private final byte[] nonce = new byte[NONCE_BYTES];
    private byte[] peerNonce;

    TokenHandshake(byte[] token, boolean initiator) {
        this.key = new SecretKeySpec(token, "HmacSHA256");
        this.initiator = initiator;
        RANDOM.nextBytes(nonce);
    }

    /** {@link #HELLO_BYTES}: the magic (big-endian) and this side's nonce. */
    public byte[] hello() {
        byte[] h = new byte[HELLO_BYTES];
        h[0] = 'T';
        h[1] = '4';
        h[2] = 'J';
        h[3] = 'A';
        System.arraycopy(nonce, 0, h, 4, NONCE_BYTES);
        return h;
    }

    /** Whether {@code bytes} begin with the hello's magic {@code T4JA}; needs 4 bytes. */
    public static boolean startsHello(byte[] bytes) {
        return bytes.length >= 4 && bytes[0] == 'T' && bytes[1] == '4' && bytes[2] == 'J' && bytes[3] == 'A';
    }

    /**
     * This side's proof for the peer's {@code hello} ({@link #HELLO_BYTES}).
     *
     * @throws SecurityException if it is no hello, or echoes this side's own nonce
     */
    public byte[] proof(byte[] hello) {
        if (hello.length != HELLO_BYTES || !startsHello(hello)) {
            throw new SecurityException("the peer did not start the token handshake (security.token is set here; "
                    + "is it set there?)");
        }
        byte[] theirs = Arrays.copyOfRange(hello, 4, HELLO_BYTES);
        if (MessageDigest.isEqual(theirs, nonce)) {
            throw new SecurityException("the peer sent this side's own nonce back");
        }
        peerNonce = theirs;
        return mac(initiator ? INITIATOR : ACCEPTOR, peerNonce, nonce);
    }

    /** Whether {@code proof} shows that the peer holds the token; call after {@link #proof}. */
    public boolean verify(byte[] proof) {
        if (peerNonce == null) {
            throw new IllegalStateException("verify before the peer's hello");
        }
        byte[] expected = mac(initiator ? ACCEPTOR : INITIATOR, nonce, peerNonce);
        return proof.length == PROOF_BYTES && MessageDigest.isEqual(expected, proof);
    }

    private byte[] mac(byte role, byte[] challenge, byte[] response) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(key);
            mac.update(LABEL);
            mac.update(role);
            mac.update(challenge);
            mac.update(response);
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available", e);
        }
    }
}
