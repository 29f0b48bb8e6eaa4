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
 * <p>Build one with {@link #builder()}. The canonical constructor is not part of the contract: a component added in a
 * later version changes it, while the builder only gains a setter (BoundariesTest keeps every module on the builder).
 *
 * @param token                  shared secret, or {@code null} for none
 * @param tlsCertificate         this engine's certificate chain (PEM), or {@code null} for no TLS
 * @param tlsPrivateKey          its private key (PKCS#8 PEM), or {@code null}
 * @param tlsTrustedCertificates certificates that sign peers' certificates (PEM), or {@code null}
 */
public record SecuritySettings(byte[] token, Path tlsCertificate, Path tlsPrivateKey, Path tlsTrustedCertificates) {
    /** Neither authentication nor TLS. */
    public static final SecuritySettings NONE = builder().build();

    /**
     * Copies the token; an empty one means none.
     *
     * @throws IllegalArgumentException with a certificate but no private key, or the reverse
     */
    public SecuritySettings {
        token = token == null || token.length == 0 ? null : token.clone();
        if ((tlsCertificate == null) != (tlsPrivateKey == null)) {
            throw new IllegalArgumentException("TLS needs both a certificate and a private key");
        }
    }

    /**
     * A builder with nothing set.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Whether connections start with the token handshake.
     *
     * @return {@code true} with a token
     */
    public boolean authenticates() {
        return token != null;
    }

    /**
     * Whether connections run over TLS.
     *
     * @return {@code true} with a certificate
     */
    public boolean tls() {
        return tlsCertificate != null;
    }

    /**
     * The token; a copy, so no caller can change it for the others.
     *
     * @return a copy, or {@code null} for none
     */
    @Override
    public byte[] token() {
        return token == null ? null : token.clone();
    }

    /**
     * A handshake for one connection; {@code initiator} is the side that connected.
     *
     * @param initiator whether this side opened the connection
     * @return a new handshake, for this connection only
     * @throws IllegalStateException when no token is configured
     */
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

    /** Builds {@link SecuritySettings}; nothing set is {@link #NONE}. */
    public static final class Builder {
        private byte[] token;
        private Path tlsCertificate;
        private Path tlsPrivateKey;
        private Path tlsTrustedCertificates;

        private Builder() {
        }

        /**
         * The shared secret (copied); {@code null} or empty for none.
         *
         * @param token the secret
         * @return this builder
         */
        public Builder token(byte[] token) {
            this.token = token;
            return this;
        }

        /**
         * Sets {@code tlsCertificate}.
         *
         * @param tlsCertificate this engine's certificate chain (PEM), or {@code null} for no TLS
         * @return this builder
         */
        public Builder tlsCertificate(Path tlsCertificate) {
            this.tlsCertificate = tlsCertificate;
            return this;
        }

        /**
         * Sets {@code tlsPrivateKey}.
         *
         * @param tlsPrivateKey its private key (PKCS#8 PEM), or {@code null}
         * @return this builder
         */
        public Builder tlsPrivateKey(Path tlsPrivateKey) {
            this.tlsPrivateKey = tlsPrivateKey;
            return this;
        }

        /**
         * Sets {@code tlsTrustedCertificates}.
         *
         * @param tlsTrustedCertificates certificates that sign peers' certificates (PEM), or {@code null}
         * @return this builder
         */
        public Builder tlsTrustedCertificates(Path tlsTrustedCertificates) {
            this.tlsTrustedCertificates = tlsTrustedCertificates;
            return this;
        }

        /**
         * The settings.
         *
         * @return a new immutable object
         * @throws IllegalArgumentException with a certificate but no private key, or the reverse
         */

        public SecuritySettings build() {
            return new SecuritySettings(token, tlsCertificate, tlsPrivateKey, tlsTrustedCertificates);
        }
    }
}
