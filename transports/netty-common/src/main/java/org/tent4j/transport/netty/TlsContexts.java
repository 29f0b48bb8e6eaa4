package org.tent4j.transport.netty;

import java.util.concurrent.CompletableFuture;

import javax.net.ssl.SSLException;

import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;

import org.tent4j.api.ConfigException;
import org.tent4j.spi.SecuritySettings;

/**
 * The TLS contexts of one transport: both sides present the configured certificate and check the other's against the
 * trusted certificates (mutual TLS), with the JDK's provider. Peers are named by the trust, not by host names, so host
 * name verification is off.
 */
public record TlsContexts(SslContext server, SslContext client) {
    public static TlsContexts of(SecuritySettings s) {
        var trust = (s.tlsTrustedCertificates() != null ? s.tlsTrustedCertificates() : s.tlsCertificate()).toFile();
        try {
            SslContext server = SslContextBuilder.forServer(s.tlsCertificate().toFile(), s.tlsPrivateKey().toFile())
                    .sslProvider(SslProvider.JDK).clientAuth(ClientAuth.REQUIRE).trustManager(trust).build();
            SslContext client = SslContextBuilder.forClient().sslProvider(SslProvider.JDK)
                    .keyManager(s.tlsCertificate().toFile(), s.tlsPrivateKey().toFile()).trustManager(trust)
                    .endpointIdentificationAlgorithm(null).build();
            return new TlsContexts(server, client);
        } catch (SSLException | IllegalArgumentException e) {
            throw new ConfigException("security.tls.certificate", "cannot use certificate " + s.tlsCertificate()
                    + " with key " + s.tlsPrivateKey() + " and trust " + trust + ": " + e.getMessage());
        }
    }

    /** The end of {@code ssl}'s handshake as a future, for chaining the token handshake after it. */
    public static CompletableFuture<Void> handshake(SslHandler ssl) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        ssl.handshakeFuture().addListener(h -> {
            if (h.isSuccess()) {
                done.complete(null);
            } else {
                done.completeExceptionally(h.cause());
            }
        });
        return done;
    }
}
