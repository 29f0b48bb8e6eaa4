package org.tent4j.store.rpc;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.HexFormat;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import io.grpc.Metadata;

/**
 * What a store call carries to prove who sends it (gRPC metadata), shared by {@link MasterClient} and
 * {@link AuthInterceptor}: the proof of the shared token, the proof of the admin token, and the client's session
 * credential. A proof is {@code HMAC-SHA256(secret, purpose)} in hex, so the secret itself never travels.
 */
final class StoreAuth {
    static final Metadata.Key<String> TOKEN = Metadata.Key.of("tent4j-store-token", Metadata.ASCII_STRING_MARSHALLER);
    static final Metadata.Key<String> ADMIN = Metadata.Key.of("tent4j-store-admin", Metadata.ASCII_STRING_MARSHALLER);
    /** {@code <client id>:<hex of the credential Register issued>}. */
    static final Metadata.Key<String> CLIENT = Metadata.Key.of("tent4j-store-client", Metadata.ASCII_STRING_MARSHALLER);

    private static final String TOKEN_PURPOSE = "tent4j-store/1 token";
    private static final String ADMIN_PURPOSE = "tent4j-store/1 admin";

    private StoreAuth() {
    }

    /** The value of {@link #TOKEN} for {@code token}; null for none. */
    static String tokenProof(byte[] token) {
        return token == null ? null : HexFormat.of().formatHex(hmac(token, TOKEN_PURPOSE));
    }

    /** The value of {@link #ADMIN} for {@code adminToken}; null for none. */
    static String adminProof(byte[] adminToken) {
        return adminToken == null ? null : HexFormat.of().formatHex(hmac(adminToken, ADMIN_PURPOSE));
    }

    static byte[] hmac(byte[] key, String message) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            return mac.doFinal(message.getBytes(StandardCharsets.UTF_8));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is unavailable", e);
        }
    }
}
