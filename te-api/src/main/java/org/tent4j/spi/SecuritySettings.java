package org.tent4j.spi;

import java.nio.file.Path;

/**
 * How the engine's connections to and from peers are secured; the same for the control plane and every transport
 * that listens on a port of its own. Built by the engine from the {@code security.*} keys.
 *
 * <p>With a {@link #token()}, every connection starts with {@link TokenHandshake}: both sides prove they hold the
 * token before any request is served. With a {@link #tlsCertificate()} and {@link #tlsPrivateKey()} (PEM, the key in
 * PKCS#8), connections run over mutually authenticated TLS, peers' certificates checked against
 * {@link #tlsTrustedCertificates()} (PEM), or against the certificate itself where no trust file is given (one key
 * pair for the whole cluster). Both are off by default.
 *
 * @param token                  shared secret, or {@code null} for none
 * @param tlsCertificate         this engine's certificate chain (PEM), or {@code null} for no TLS
 * @param tlsPrivateKey          its private key (PKCS#8 PEM), or {@code null}
 * @param tlsTrustedCertificates certificates that sign peers' certificates (PEM), or {@code null}
 */
public record SecuritySettings(byte[] token, Path tlsCertificate, Path tlsPrivateKey, Path tlsTrustedCertificates) {
    /** Neither authentication nor TLS. */
    public static final SecuritySettings NONE = new SecuritySettings(null, null, null, null);

    public SecuritySettings {
        token = token == null || token.length == 0 ? null : token.clone();
        if ((tlsCertificate == null) != (tlsPrivateKey == null)) {
            throw new IllegalArgumentException("TLS needs both a certificate and a private key");
        }
    }

    /** Whether connections start with the token handshake. */
    public boolean authenticates() {
        return token != null;
    }

    /** Whether connections run over TLS. */
    public boolean tls() {
        return tlsCertificate != null;
    }

    /** The token; a copy, so no caller can change it for the others. */
    @Override
    public byte[] token() {
        return token == null ? null : token.clone();
    }

    /** A handshake for one connection; {@code initiator} is the side that connected. */
    public TokenHandshake handshake(boolean initiator) {
        if (token == null) {
            throw new IllegalStateException("no security token is configured");
        }
        return new TokenHandshake(token, initiator);
    }

    /** Never prints the token. */
    @Override
    public String toString() {
        return "SecuritySettings[token=" + (token == null ? "none" : "set") + ", tls=" + (tls() ? tlsCertificate : "off")
                + "]";
    }
}
