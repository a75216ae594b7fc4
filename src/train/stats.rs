//! The statistics of an evaluation: the mean of the batches' losses and how far it may be off.

/// The mean of samples and its standard error (the samples' spread over the root of their count).
pub(super) fn mean_and_standard_error(xs: &[f32]) -> (f32, f32) {
    let n = xs.len() as f64;
    let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / n;
    let var = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean as f32, (var / n).sqrt() as f32)
}

#[cfg(test)]
mod tests {
    use super::mean_and_standard_error;

    #[test]
    fn the_standard_error_is_the_spread_over_the_root_of_the_count() {
        // Sample standard deviation of 1, 2, 3, 4, 5 is √2.5; over √5 that is √0.5.
        let (mean, se) = mean_and_standard_error(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(mean, 3.0);
        assert!((se - 0.5f32.sqrt()).abs() < 1e-6, "{se}");
        assert_eq!(mean_and_standard_error(&[2.0; 4]), (2.0, 0.0));
    }
}
