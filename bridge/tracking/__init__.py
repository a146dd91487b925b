"""Camera trackers' post-processing: network outputs filtered, held while lost, calibrated, encoded."""
