package org.tent4j.store;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * How the store's RPC is secured, on the master and in every client: a shared {@link #token()} (the engine's
 * {@code security.token}: one secret for a cluster's engines and its store), an {@link #adminToken()} for forced
 * bulk removal, and mutual TLS from the engine's PEM files ({@code security.tls.*}). All off by default.
 *
 * <p>Neither token travels: a call carries an HMAC-SHA256 of it (a proof bound to its purpose), so a proof seen on
 * the wire opens the store's port and nothing else, not an engine's control plane. Without TLS the proof itself can
 * be replayed by whoever reads the traffic; with TLS nobody else reads it.
 *
 * @param token                  shared secret every caller must prove, or {@code null}: the master serves everyone
 * @param adminToken             secret for forced bulk removal, or {@code null}
 * @param tlsCertificate         this side's certificate chain (PEM), or {@code null} for no TLS
 * @param tlsPrivateKey          its private key (PKCS#8 PEM)
 * @param tlsTrustedCertificates certificates that sign the peer's (PEM), or {@code null}: the own certificate
 */
public record StoreSecurity(byte[] token, byte[] adminToken, Path tlsCertificate, Path tlsPrivateKey,
                            Path tlsTrustedCertificates) {
    /** No token, no TLS: the master serves whoever reaches it. */
    public static final StoreSecurity NONE = new StoreSecurity(null, null, null, null, null);

    public StoreSecurity {
        token = token == null || token.length == 0 ? null : token.clone();
        adminToken = adminToken == null || adminToken.length == 0 ? null : adminToken.clone();
        if ((tlsCertificate == null) != (tlsPrivateKey == null)) {
            throw new IllegalArgumentException("TLS needs both a certificate and a private key");
        }
    }

    public StoreSecurity withToken(byte[] token) {
        return new StoreSecurity(token, adminToken, tlsCertificate, tlsPrivateKey, tlsTrustedCertificates);
    }

    public StoreSecurity withAdminToken(byte[] adminToken) {
        return new StoreSecurity(token, adminToken, tlsCertificate, tlsPrivateKey, tlsTrustedCertificates);
    }

    /** Mutual TLS with {@code certificate} and {@code privateKey}; peers checked against {@code trusted} (null: the certificate). */
    public StoreSecurity withTls(Path certificate, Path privateKey, Path trusted) {
        return new StoreSecurity(token, adminToken, certificate, privateKey, trusted);
    }

    @Override
    public byte[] token() {
        return token == null ? null : token.clone();
    }

    @Override
    public byte[] adminToken() {
        return adminToken == null ? null : adminToken.clone();
    }

    public boolean authenticates() {
        return token != null;
    }

    public boolean tls() {
        return tlsCertificate != null;
    }

    /**
     * A token file as the engine reads {@code security.token_file}: UTF-8, surrounding whitespace dropped; an
     * unreadable or empty file is an {@link IllegalArgumentException} naming it.
     */
    public static byte[] readToken(Path file) {
        String token;
        try {
            token = Files.readString(file, StandardCharsets.UTF_8).strip();
        } catch (IOException | RuntimeException e) {
            throw new IllegalArgumentException("cannot read token file " + file + ": " + e.getMessage(), e);
        }
        if (token.isEmpty()) {
            throw new IllegalArgumentException("token file " + file + " is empty");
        }
        return token.getBytes(StandardCharsets.UTF_8);
    }

    /** Never prints a token. */
    @Override
    public String toString() {
        return "StoreSecurity[token=" + (token == null ? "none" : "set") + ", adminToken="
                + (adminToken == null ? "none" : "set") + ", tls=" + (tls() ? tlsCertificate : "off") + "]";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof StoreSecurity s && java.util.Arrays.equals(token, s.token)
                && java.util.Arrays.equals(adminToken, s.adminToken) && java.util.Objects.equals(tlsCertificate, s.tlsCertificate)
                && java.util.Objects.equals(tlsPrivateKey, s.tlsPrivateKey)
                && java.util.Objects.equals(tlsTrustedCertificates, s.tlsTrustedCertificates);
    }

    @Override
    public int hashCode() {
        return java.util.Objects.hash(java.util.Arrays.hashCode(token), java.util.Arrays.hashCode(adminToken), tlsCertificate);
    }
}
