package org.tent4j.cli.store;

import java.nio.file.Path;
import java.util.Map;

import org.tent4j.api.EngineConfig;
import org.tent4j.store.StoreSecurity;

import picocli.CommandLine.Option;

/**
 * How every store command secures the store's RPC: the engine's token and TLS files, named as the engine names them.
 * An option left out falls back to the engine's environment variable ({@code TENT4J_SECURITY_TOKEN_FILE},
 * {@code TENT4J_SECURITY_TOKEN}, {@code TENT4J_SECURITY_TLS_*}), so one setting secures the node's engine and its
 * store calls alike.
 */
final class SecurityOptions {
    static final String TOKEN = "security.token";
    static final String TOKEN_FILE = "security.token_file";
    static final String TLS_CERTIFICATE = "security.tls.certificate";
    static final String TLS_PRIVATE_KEY = "security.tls.private_key";
    static final String TLS_TRUSTED = "security.tls.trusted_certificates";

    @Option(names = {"--token-file", "--token_file"}, paramLabel = "FILE",
            description = "File holding the cluster's shared token (the engine's security.token_file); every store "
                    + "call proves it. Default: $TENT4J_SECURITY_TOKEN_FILE, else $TENT4J_SECURITY_TOKEN, else none.")
    Path tokenFile;

    @Option(names = {"--tls-cert", "--tls_cert"}, paramLabel = "CHAIN.pem",
            description = "Certificate for mutual TLS (security.tls.certificate). Default: $TENT4J_SECURITY_TLS_CERTIFICATE.")
    Path tlsCertificate;

    @Option(names = {"--tls-key", "--tls_key"}, paramLabel = "KEY.pem",
            description = "Its PKCS#8 private key (security.tls.private_key). Default: $TENT4J_SECURITY_TLS_PRIVATE_KEY.")
    Path tlsPrivateKey;

    @Option(names = {"--tls-trusted", "--tls_trusted"}, paramLabel = "TRUSTED.pem",
            description = "Certificates peers are checked against (security.tls.trusted_certificates). Default: "
                    + "$TENT4J_SECURITY_TLS_TRUSTED_CERTIFICATES, else the own certificate.")
    Path tlsTrusted;

    /** What these options (or the environment) say; an unreadable or empty token file throws naming it. */
    StoreSecurity security(Map<String, String> env) {
        byte[] token = null;
        Path file = tokenFile != null ? tokenFile : path(env, TOKEN_FILE);
        String inline = env.get(EngineConfig.environmentVariable(TOKEN));
        if (file != null) {
            token = StoreSecurity.readToken(file);
        } else if (inline != null && !inline.isEmpty()) {
            token = inline.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        }
        Path cert = tlsCertificate != null ? tlsCertificate : path(env, TLS_CERTIFICATE);
        Path key = tlsPrivateKey != null ? tlsPrivateKey : path(env, TLS_PRIVATE_KEY);
        Path trusted = tlsTrusted != null ? tlsTrusted : path(env, TLS_TRUSTED);
        return new StoreSecurity(token, null, cert, key, trusted);
    }

    /** The engine keys an option set here stands for (the environment reaches the engine by itself). */
    void applyTo(EngineConfig.Builder cfg) {
        if (tokenFile != null) {
            cfg.set(TOKEN_FILE, tokenFile.toString());
        }
        if (tlsCertificate != null) {
            cfg.set(TLS_CERTIFICATE, tlsCertificate.toString());
        }
        if (tlsPrivateKey != null) {
            cfg.set(TLS_PRIVATE_KEY, tlsPrivateKey.toString());
        }
        if (tlsTrusted != null) {
            cfg.set(TLS_TRUSTED, tlsTrusted.toString());
        }
    }

    private static Path path(Map<String, String> env, String key) {
        String v = env.get(EngineConfig.environmentVariable(key));
        return v == null || v.isEmpty() ? null : Path.of(v);
    }
}
