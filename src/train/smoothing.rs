//! Smoothing a noisy loss curve for display, as TensorBoard does.

/// An exponential moving average with weight `alpha` on the past, debiased (divided by the
/// weight the average has gathered), so that the first points are the average of what came so
/// far rather than pulled towards zero or held at the first point.
pub fn smooth(values: &[(u64, f32)], alpha: f32) -> Vec<(u64, f32)> {
    let mut average = 0.0;
    let mut weight = 1.0;
    values
        .iter()
        .map(|&(step, v)| {
            average = alpha * average + (1.0 - alpha) * v;
            weight *= alpha;
            (step, average / (1.0 - weight))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::smooth;

    #[test]
    fn smoothing_follows_a_falling_curve_without_lagging_at_its_start() {
        let raw: Vec<(u64, f32)> = (0..5).map(|i| (i, 4.0 - i as f32)).collect();
        let s = smooth(&raw, 0.8);
        assert_eq!(s[0], (0, 4.0));
        // After 4.0 and 3.0, the debiased average weighs the later point more: (0.2·4·0.8 +
        // 0.2·3) / (1 − 0.64) = 3.444…, where a plain average started at 4.0 gives 3.8.
        assert!((s[1].1 - 3.4444).abs() < 1e-3, "{s:?}");
        assert!(s.windows(2).all(|w| w[1].1 < w[0].1), "{s:?}");
        let flat = smooth(&[(0, 2.0), (1, 2.0), (2, 2.0)], 0.99);
        assert!(flat.iter().all(|p| (p.1 - 2.0).abs() < 1e-5), "{flat:?}");
        assert_eq!(smooth(&raw, 0.0), raw);
    }
}
