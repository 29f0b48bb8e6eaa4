package org.tent4j.metadata.redis;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.util.Collection;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;

/** Trust in exactly the CA certificates of a PEM bundle (as redis-server's --tls-ca-cert-file takes them). */
final class PemTrust {
    private PemTrust() {
    }

    static SSLSocketFactory socketFactory(Path caBundle) throws IOException {
        Collection<? extends Certificate> cas;
        try (InputStream in = Files.newInputStream(caBundle)) {
            cas = java.security.cert.CertificateFactory.getInstance("X.509").generateCertificates(in);
        } catch (GeneralSecurityException e) {
            throw new IOException(caBundle + " is not a PEM certificate file: " + e.getMessage(), e);
        }
        if (cas.isEmpty()) {
            throw new IOException(caBundle + " holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
        }
        try {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            int i = 0;
            for (Certificate c : cas) {
                store.setCertificateEntry("ca-" + i++, c);
            }
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(store);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, tmf.getTrustManagers(), null);
            return context.getSocketFactory();
        } catch (GeneralSecurityException e) {
            throw new IOException("cannot trust the CA certificates in " + caBundle + ": " + e.getMessage(), e);
        }
    }
}
