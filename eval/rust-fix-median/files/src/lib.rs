//! Summary statistics for the greenhouse temperature sensors.

/// Arithmetic mean; `None` for no readings.
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    Some(values.iter().sum::<f64>() / values.len() as f64)
}

/// Middle value of the sorted readings (mean of the two middle ones for an
/// even count); `None` for no readings.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        Some(sorted[mid])
    } else {
        Some(sorted[mid - 1] + sorted[mid] / 2.0)
    }
}

/// Difference between the highest and lowest reading.
pub fn spread(values: &[f64]) -> Option<f64> {
    let max = values.iter().cloned().fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))?;
    let min = values.iter().cloned().fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.min(v))))?;
    Some(max - min)
}

/// Readings more than `limit` degrees away from the median.
pub fn outliers(values: &[f64], limit: f64) -> Vec<f64> {
    match median(values) {
        Some(m) => values.iter().cloned().filter(|v| (v - m).abs() > limit).collect(),
        None => Vec::new(),
    }
}
