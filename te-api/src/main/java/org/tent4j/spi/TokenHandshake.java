package org.tent4j.spi;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.Arrays;

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
    /** Bytes of each side's random nonce. */
    public static final int NONCE_BYTES = 32;
    /** Bytes of a hello: the magic {@code T4JA} and the nonce. */
    public static final int HELLO_BYTES = 4 + NONCE_BYTES;
    /** Bytes of a proof: one HMAC-SHA256. */
    public static final int PROOF_BYTES = 32;
    /** What a side receives before it may trust the connection: the peer's hello, then its proof. */
    public static final int PEER_BYTES = HELLO_BYTES + PROOF_BYTES;

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final byte[] LABEL = "tent4j token handshake v1".getBytes(StandardCharsets.US_ASCII);
    private static final byte INITIATOR = 'I';
    private static final byte ACCEPTOR = 'A';

    private static final int SHA256_BLOCK = 64;

    /** The token padded to SHA-256's block, xor-ed with HMAC's inner and outer pads (RFC 2104). */
    private final byte[] innerPad = new byte[SHA256_BLOCK];
    private final byte[] outerPad = new byte[SHA256_BLOCK];
    private final boolean initiator;
    private final byte[] nonce = new byte[NONCE_BYTES];
    private byte[] peerNonce;

    TokenHandshake(byte[] token, boolean initiator) {
        byte[] key = token.length > SHA256_BLOCK ? sha256().digest(token) : token;
        for (int i = 0; i < SHA256_BLOCK; i++) {
            byte k = i < key.length ? key[i] : 0;
            innerPad[i] = (byte) (k ^ 0x36);
            outerPad[i] = (byte) (k ^ 0x5c);
        }
        this.initiator = initiator;
        RANDOM.nextBytes(nonce);
    }

    /**
     * {@link #HELLO_BYTES}: the magic (big-endian) and this side's nonce.
     *
     * @return a fresh array to send
     */
    public byte[] hello() {
        byte[] h = new byte[HELLO_BYTES];
        h[0] = 'T';
        h[1] = '4';
        h[2] = 'J';
        h[3] = 'A';
        System.arraycopy(nonce, 0, h, 4, NONCE_BYTES);
        return h;
    }

    /**
     * Whether {@code bytes} begin with the hello's magic {@code T4JA}; needs 4 bytes.
     *
     * @param bytes what the peer sent first
     * @return {@code false} for fewer than 4 bytes or another start
     */
    public static boolean startsHello(byte[] bytes) {
        return bytes.length >= 4 && bytes[0] == 'T' && bytes[1] == '4' && bytes[2] == 'J' && bytes[3] == 'A';
    }

    /**
     * This side's proof for the peer's {@code hello} ({@link #HELLO_BYTES}).
     *
     * @param hello the peer's hello, as received (hostile)
     * @return {@link #PROOF_BYTES} to send
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

    /**
     * Whether {@code proof} shows that the peer holds the token; call after {@link #proof}. Compares in constant time.
     *
     * @param proof the peer's proof, as received (hostile; any length)
     * @return {@code true} only for the right proof; on {@code false} close the connection without serving anything
     * @throws IllegalStateException when called before {@link #proof}
     */

    public boolean verify(byte[] proof) {
        if (peerNonce == null) {
            throw new IllegalStateException("verify before the peer's hello");
        }
        byte[] expected = mac(initiator ? ACCEPTOR : INITIATOR, nonce, peerNonce);
        return proof.length == PROOF_BYTES && MessageDigest.isEqual(expected, proof);
    }

    /**
     * HMAC-SHA256 (RFC 2104) over the label, role and nonces, written out with {@link MessageDigest} because te-api
     * depends on {@code java.*} only (javax.crypto's {@code Mac} computes the same).
     */
    private byte[] mac(byte role, byte[] challenge, byte[] response) {
        MessageDigest inner = sha256();
        inner.update(innerPad);
        inner.update(LABEL);
        inner.update(role);
        inner.update(challenge);
        inner.update(response);
        MessageDigest outer = sha256();
        outer.update(outerPad);
        outer.update(inner.digest());
        return outer.digest();
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is not available", e);
        }
    }
}
