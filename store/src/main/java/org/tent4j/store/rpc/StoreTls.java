package org.tent4j.store.rpc;

import java.net.Socket;
import java.security.KeyStore;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;

import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedTrustManager;
import javax.net.ssl.X509TrustManager;

import io.grpc.netty.GrpcSslContexts;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import org.tent4j.store.StoreSecurity;

/**
 * Mutual TLS for the store's RPC from the engine's PEM files ({@code security.tls.*}): both sides present their
 * certificate and check the other's against the trusted certificates (the own certificate where none are given),
 * as the engine's control plane does. Peers are named by the trust, not by host names: gRPC asks the JDK to check
 * the master's host name, so the trust manager here checks the chain alone.
 */
final class StoreTls {
    private StoreTls() {
    }

    static SslContext server(StoreSecurity s) {
        try {
            return GrpcSslContexts.configure(SslContextBuilder.forServer(s.tlsCertificate().toFile(), s.tlsPrivateKey().toFile()),
                    SslProvider.JDK).clientAuth(ClientAuth.REQUIRE).trustManager(trust(s)).build();
        } catch (SSLException | IllegalArgumentException e) {
            throw refused(s, e);
        }
    }

    static SslContext client(StoreSecurity s) {
        try {
            return GrpcSslContexts.configure(SslContextBuilder.forClient(), SslProvider.JDK)
                    .keyManager(s.tlsCertificate().toFile(), s.tlsPrivateKey().toFile()).trustManager(trust(s)).build();
        } catch (SSLException | IllegalArgumentException e) {
            throw refused(s, e);
        }
    }

    private static IllegalArgumentException refused(StoreSecurity s, Exception e) {
        return new IllegalArgumentException("cannot use TLS certificate " + s.tlsCertificate() + " with key "
                + s.tlsPrivateKey() + " and trust " + trustFile(s) + ": " + e.getMessage(), e);
    }

    private static Path trustFile(StoreSecurity s) {
        return s.tlsTrustedCertificates() != null ? s.tlsTrustedCertificates() : s.tlsCertificate();
    }

    /** The JDK's chain check against the trusted certificates, with no host name check. */
    private static X509ExtendedTrustManager trust(StoreSecurity s) {
        Path file = trustFile(s);
        try (InputStream in = Files.newInputStream(file)) {
            KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
            ks.load(null, null);
            int i = 0;
            for (var c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                ks.setCertificateEntry("trusted-" + i++, c);
            }
            if (i == 0) {
                throw new IllegalArgumentException(file + " holds no certificate");
            }
            TrustManagerFactory f = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            f.init(ks);
            X509TrustManager chain = (X509TrustManager) f.getTrustManagers()[0];
            return new ChainOnly(chain);
        } catch (IOException | java.security.GeneralSecurityException e) {
            throw new IllegalArgumentException("cannot read trusted certificates " + file + ": " + e.getMessage(), e);
        }
    }

    private static final class ChainOnly extends X509ExtendedTrustManager {
        private final X509TrustManager chain;

        ChainOnly(X509TrustManager chain) {
            this.chain = chain;
        }

        @Override
        public void checkClientTrusted(X509Certificate[] certs, String authType) throws CertificateException {
            chain.checkClientTrusted(certs, authType);
        }

        @Override
        public void checkServerTrusted(X509Certificate[] certs, String authType) throws CertificateException {
            chain.checkServerTrusted(certs, authType);
        }

        @Override
        public void checkClientTrusted(X509Certificate[] certs, String authType, Socket socket) throws CertificateException {
            chain.checkClientTrusted(certs, authType);
        }

        @Override
        public void checkServerTrusted(X509Certificate[] certs, String authType, Socket socket) throws CertificateException {
            chain.checkServerTrusted(certs, authType);
        }

        @Override
        public void checkClientTrusted(X509Certificate[] certs, String authType, SSLEngine engine) throws CertificateException {
            chain.checkClientTrusted(certs, authType);
        }

        @Override
        public void checkServerTrusted(X509Certificate[] certs, String authType, SSLEngine engine) throws CertificateException {
            chain.checkServerTrusted(certs, authType);
        }

        @Override
        public X509Certificate[] getAcceptedIssuers() {
            return chain.getAcceptedIssuers();
        }
    }
}
