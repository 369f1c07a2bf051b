package kiggy.ecosystem;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.Map;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;

/** FileSinkTask is FileSinkConnector's task. */
public final class FileSinkTask extends SinkTask {
    private FileOutputStream out;
    private Writer w;

    @Override
    public void start(Map<String, String> props) {
        String file = new AbstractConfig(FileSinkConnector.CONFIG, props).getString(FileSinkConnector.FILE);
        try {
            out = new FileOutputStream(file, true);
        } catch (IOException e) {
            throw new ConnectException("opening " + file, e);
        }
        w = new OutputStreamWriter(out, StandardCharsets.UTF_8);
    }

    @Override
    public void put(Collection<SinkRecord> records) {
        try {
            for (SinkRecord r : records) {
                w.write(r.topic() + "/" + r.kafkaPartition() + "/" + r.kafkaOffset() + "\t" + r.key() + "\t" + r.value() + "\n");
            }
            w.flush();
        } catch (IOException e) {
            throw new ConnectException("writing", e);
        }
    }

    @Override
    public void flush(Map<TopicPartition, OffsetAndMetadata> offsets) {
        try {
            w.flush();
            out.getFD().sync();
        } catch (IOException e) {
            throw new ConnectException("syncing", e);
        }
    }

    @Override
    public void stop() {
        try {
            if (w != null) {
                w.close();
            }
        } catch (IOException e) {
            throw new ConnectException("closing", e);
        }
    }

    @Override
    public String version() {
        return "1";
    }
}
