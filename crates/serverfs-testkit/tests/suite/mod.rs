mod mock_model;
